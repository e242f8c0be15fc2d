"""Kill a checkpointing training with SIGKILL again and again, then resume it.

Each trial starts ``streamssvm train STORE --checkpoint ... --resume`` (plain SGD on the
psi_G loss, seeded, a checkpoint after every epoch) and kills it: every other trial at a
random moment (start-up included), the others at a random moment after the child has
written a checkpoint. After every kill it checks what is on disk: no model file (or, when
the kill came after the model was renamed into place, the whole final model), and a
checkpoint that is absent or whole, whose epoch never goes back. Then one last run
resumes to the end, and its model must equal, bit for bit, that of an uninterrupted run.

Example:
    python tools/kill_train.py STORE --kills 100
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

from tool_args import REPO_ROOT, existing_store, repo_env

sys.path.insert(0, REPO_ROOT)  # the repository's streamssvm, here and in the children


def command(store, model, checkpoint, epochs):
    """The CLI training, resuming from ``checkpoint`` when there is one."""
    args = [sys.executable, "-m", "streamssvm", "train", str(store), "-o", str(model),
            "--loss", "psi_g", "--lam", "1e-4", "--solver", "sgd", "--max-iter", str(epochs),
            "--seed", "11", "--tol", "0", "--threads", "1", "--quiet", "--overwrite"]
    if checkpoint is not None:
        args += ["--checkpoint", str(checkpoint), "--checkpoint-every", "0"]
        if os.path.exists(checkpoint):
            args.append("--resume")
    return args


def _mtime(path):
    return os.stat(path).st_mtime_ns if os.path.exists(path) else None


def run(store, workdir, n_kills, seed=0, epochs=60):
    """``n_kills`` killed trials, then a resume. Returns ``(epochs seen after each kill,
    trials that finished (or wrote their model) before their kill, whether the resumed
    model equals the uninterrupted one)``; raises AssertionError on anything torn."""
    from streamssvm import Model

    env = repo_env()
    straight = os.path.join(workdir, "straight.npz")
    subprocess.run(command(store, straight, None, epochs), env=env, check=True)
    model, checkpoint = os.path.join(workdir, "model.npz"), os.path.join(workdir, "run.ckpt")
    rng = np.random.default_rng(seed)
    seen, finished, kills, last = [], 0, 0, -1
    while kills < n_kills:
        before = _mtime(checkpoint)
        child = subprocess.Popen(command(store, model, checkpoint, epochs), env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if kills % 2:  # during training: once a checkpoint has been written
            deadline = time.monotonic() + 60
            while child.poll() is None and time.monotonic() < deadline \
                    and _mtime(checkpoint) == before:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.3))
        else:  # anywhere, start-up included
            time.sleep(rng.uniform(0.0, 1.5))
        if child.poll() is not None:  # finished before the kill: start over
            assert child.returncode == 0, child.stderr.read().decode()
            finished += 1
            os.unlink(model)
            os.unlink(checkpoint)
            last = -1  # a new training from scratch
            continue
        child.send_signal(signal.SIGKILL)
        child.wait()
        kills += 1
        if os.path.exists(model):  # killed after the model was written: it must be whole
            assert np.array_equal(Model.load(model).coef_, Model.load(straight).coef_), \
                "a killed training left a model that differs from the uninterrupted one"
            finished += 1
            os.unlink(model)
            os.unlink(checkpoint)
            last = -1
            continue
        if os.path.exists(checkpoint):
            with np.load(checkpoint, allow_pickle=False) as z:
                epoch = json.loads(str(z["meta"]))["epoch"]
            assert epoch >= last, f"checkpoint went back: {last} -> {epoch}"
            seen.append(epoch)
            last = epoch
    subprocess.run(command(store, model, checkpoint, epochs), env=env, check=True)
    equal = bool(np.array_equal(Model.load(straight).coef_, Model.load(model).coef_))
    return seen, finished, equal


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=existing_store, help="a binary store to train on")
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        seen, finished, equal = run(args.store, workdir, args.kills, args.seed, args.epochs)
    print(f"{args.kills} trainings killed (checkpoint epochs after the kills: "
          f"{seen[0] if seen else '-'} .. {seen[-1] if seen else '-'}, {len(seen)} with a "
          f"checkpoint); {finished} finished before their kill; resumed model "
          f"{'equals' if equal else 'DIFFERS FROM'} the uninterrupted one")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
