"""Losses of the margin: value, first and second derivative, conjugate (and nothing about X).

``get_loss(name, ...)`` gives a named loss (see :mod:`streamssvm.losses.registry`),
``family_loss(Phi_c, ...)`` a member of the paper's general family built from a user's
Phi_c (see :mod:`streamssvm.losses.family`), ``describe_losses()`` one line per named loss.
"""

from .family import FamilyInfo, family_loss
from .registry import LOSS_NAMES, Loss, describe_losses, get_loss

__all__ = ["LOSS_NAMES", "FamilyInfo", "Loss", "describe_losses", "family_loss", "get_loss"]
