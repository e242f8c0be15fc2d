"""LLVM instructions numba does not offer, as numba intrinsics: a prefetch hint and the
atomic loads and stores of the two-thread SGD kernel."""

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Ask the caches for ``array[index]`` (LLVM's prefetch: read, keep in all levels)."""
    def codegen(context, builder, signature, args):
        at = _address(context, builder, signature, args)
        pointer = ir.PointerType(ir.IntType(8))
        function = builder.module.declare_intrinsic(  # named for this LLVM's pointers
            "llvm.prefetch", [pointer], ir.FunctionType(ir.VoidType(),
                                                        [pointer] + [ir.IntType(32)] * 3))
        builder.call(function, [builder.bitcast(at, pointer)]
                     + [ir.Constant(ir.IntType(32), c) for c in (0, 3, 1)])
        return context.get_dummy_value()
    return types.void(array, index), codegen


@intrinsic
def load_acquire(typingctx, array, index):
    """array[index] of an int64 array, read atomically with acquire ordering."""
    def codegen(context, builder, signature, args):
        return builder.load_atomic(_address(context, builder, signature, args), "acquire", 8)
    return types.int64(array, index), codegen


@intrinsic
def store_release(typingctx, array, index, value):
    """array[index] = value, an int64 written atomically with release ordering."""
    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[2], signature.args[2], types.int64)
        builder.store_atomic(value, _address(context, builder, signature, args), "release", 8)
        return context.get_dummy_value()
    return types.void(array, index, value), codegen


def _address(context, builder, signature, args):
    """The pointer to ``array[index]``, the intrinsic's first two arguments."""
    array_type, index_type = signature.args[:2]
    data = context.make_array(array_type)(context, builder, args[0]).data
    return builder.gep(data, [context.cast(builder, args[1], index_type, types.intp)])
