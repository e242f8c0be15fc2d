"""Data shipped with the package: LIBSVM's a9a (UCI Adult), train and test, svmlight + xz.

32,561 training and 16,281 test rows, 123 binary features, labels -1/+1.
"""

from importlib import resources

A9A_SHAPE = (32_561, 123)  # the training file's rows and features


def a9a_paths():
    """Paths of the shipped ``a9a.svm.xz`` (train) and ``a9a.t.svm.xz`` (test)."""
    root = resources.files(__name__)
    return str(root / "a9a.svm.xz"), str(root / "a9a.t.svm.xz")
