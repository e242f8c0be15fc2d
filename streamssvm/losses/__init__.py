"""Losses of the margin: value, first and second derivative (and nothing about X)."""

from .registry import LOSS_NAMES, Loss, get_loss

__all__ = ["LOSS_NAMES", "Loss", "get_loss"]
