"""Coverage bins shared by the BFP unit testbenches."""

from __future__ import annotations

from lockstep.models.bfp.params import BfpFormat

__all__ = ["EXP_BINS", "exp_class"]

#: Bins of :func:`exp_class`, in order.
EXP_BINS = ["e_min", "neg", "zero", "pos", "e_max"]


def exp_class(e: int, fmt: BfpFormat) -> str:
    """Class of a shared exponent: the format's two extremes, else its sign."""
    if e == fmt.e_min:
        return "e_min"
    if e == fmt.e_max:
        return "e_max"
    return "neg" if e < 0 else "zero" if e == 0 else "pos"
