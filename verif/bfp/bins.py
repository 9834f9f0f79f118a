"""Coverage bin and output column helpers shared by the BFP unit testbenches."""

from __future__ import annotations

import numpy as np

from lockstep.models.bfp.params import BfpFormat

__all__ = ["EXP_BINS", "exp_class", "signed_column"]

#: Bins of :func:`exp_class`, in order.
EXP_BINS = ["e_min", "neg", "zero", "pos", "e_max"]


def exp_class(e: int, fmt: BfpFormat) -> str:
    """Class of a shared exponent: the format's two extremes, else its sign."""
    if e == fmt.e_min:
        return "e_min"
    if e == fmt.e_max:
        return "e_max"
    return "neg" if e < 0 else "zero" if e == 0 else "pos"


def signed_column(values: list[int], width: int) -> np.ndarray:
    """Two's-complement readings of ``width``-bit unsigned values (``width <= 64``), as int64."""
    u = np.array(values, dtype=np.uint64)
    if width < 64:
        u = (u & np.uint64((1 << width) - 1)) ^ np.uint64(1 << (width - 1))  # offset binary: subtracting the offset sign-extends
        return u.astype(np.int64) - np.int64(1 << (width - 1))
    return u.view(np.int64)
