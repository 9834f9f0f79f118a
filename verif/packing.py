"""Packing of lane vectors into flat buses (lane i at bits [i*width +: width])."""

from __future__ import annotations

from typing import Iterable

import numpy as np

__all__ = ["pack_lanes", "unpack_lanes", "to_signed"]


def pack_lanes(values: Iterable[int], width: int) -> int:
    """Pack lane values (two's complement for negatives) into one integer.

    Args:
        values: lane values, lane 0 first.
        width: bits per lane.

    Returns:
        The bus value.
    """
    mask = (1 << width) - 1
    bus = 0
    for i, v in enumerate(values):
        bus |= (int(v) & mask) << (i * width)
    return bus


def unpack_lanes(bus: int, width: int, count: int, signed: bool = False) -> np.ndarray:
    """Inverse of :func:`pack_lanes`.

    Args:
        bus: the bus value.
        width: bits per lane.
        count: lanes.
        signed: interpret lanes as two's complement.

    Returns:
        int64 array of ``count`` lane values.
    """
    mask = (1 << width) - 1
    out = [(bus >> (i * width)) & mask for i in range(count)]
    if signed:
        out = [to_signed(v, width) for v in out]
    return np.array(out, dtype=np.int64)


def to_signed(value: int, width: int) -> int:
    """Two's-complement reading of a ``width``-bit unsigned value."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value
