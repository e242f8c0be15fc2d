"""Draw the loss family like Figure 2 of Luo, Qiao & Zhang, "Learning with smooth hinge losses".

Left: psi_M for several sigma against the hinge (psi_M -> hinge as sigma -> 0, with
0 <= psi_M - hinge <= sigma / 2). Right: surrogate losses of the margin side by side.

    python tools/plot_losses.py [--out docs/losses.png]

Needs matplotlib (the optional extra ``plot``: ``pip install -e .[plot]``); the library
itself never imports it.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from streamssvm.losses import get_loss  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("docs", "losses.png"))
    parser.add_argument("--dpi", type=int, default=150)
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a = np.linspace(-2.0, 3.0, 2001)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8), constrained_layout=True)

    left.plot(a, np.maximum(0.0, 1.0 - a), color="black", lw=2.2, label="hinge")
    for sigma, color in zip([1.0, 0.5, 0.25, 0.1], plt.cm.viridis(np.linspace(0.1, 0.85, 4))):
        left.plot(a, get_loss("psi_m", sigma=sigma)(a), color=color, lw=1.6,
                  label=rf"$\psi_M$, $\sigma$ = {sigma:g}")
    left.set_xlim(-1.0, 2.5)
    left.set_ylim(-0.1, 2.2)
    left.set_xlabel(r"margin $\alpha = y\,w^T x$")
    left.set_ylabel(r"loss $\psi(\alpha)$")
    left.set_title(r"$\psi_M(\alpha;\sigma) \to$ hinge as $\sigma \to 0$")
    left.legend(frameon=False)
    left.grid(alpha=0.3)

    right.step(a, (a <= 0).astype(float), where="post", color="black", lw=1.2, ls=":",
               label="0/1")
    curves = [
        ("hinge", get_loss("hinge"), "black", "-"),
        ("squared hinge", get_loss("squared_hinge"), "tab:gray", "--"),
        ("logistic / ln 2", None, "tab:orange", "-"),
        ("exponential", get_loss("exponential"), "tab:red", "-."),
        (r"$\psi_G$, $\sigma$ = 0.5", get_loss("psi_g", sigma=0.5), "tab:blue", "-"),
        (r"$\psi_M$, $\sigma$ = 0.5", get_loss("psi_m", sigma=0.5), "tab:green", "-"),
        (r"$\ell_\gamma$, $\gamma$ = 1", get_loss("smoothed_hinge", gamma=1.0), "tab:purple", "--"),
        (r"smooth sq. hinge, $\sigma$ = 0.5", get_loss("smooth_squared_hinge", sigma=0.5),
         "tab:brown", ":"),
        (r"$K_h$, $h$ = 0.5", get_loss("kh_hinge", h=0.5), "tab:olive", "--"),
    ]
    logistic = get_loss("logistic")
    for label, loss, color, style in curves:
        values = logistic(a) / np.log(2.0) if loss is None else loss(a)
        right.plot(a, values, color=color, ls=style, lw=1.6, label=label)
    right.set_xlim(-1.5, 2.5)
    right.set_ylim(-0.1, 3.0)
    right.set_xlabel(r"margin $\alpha = y\,w^T x$")
    right.set_title("surrogate losses of the 0/1 loss")
    right.legend(frameon=False, fontsize=8.5, ncol=2, loc="upper right")
    right.grid(alpha=0.3)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=args.dpi)
    print(args.out)


if __name__ == "__main__":
    main()
