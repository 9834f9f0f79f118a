"""Packing of lane vectors into flat buses (lane i at bits [i*width +: width]).

Both directions go through bytes and numpy's bit (un)packing, so a bus of any lane
width and count costs a few microseconds, not a Python loop per lane: the throughput
testbenches pack and unpack every transaction.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from lockstep.models.record import as_int

__all__ = ["pack_lanes", "unpack_lanes", "unpack_rows", "to_signed"]

_NATIVE = {8: np.uint8, 16: np.dtype("<u2"), 32: np.dtype("<u4"), 64: np.dtype("<u8")}


def pack_lanes(values: Iterable[int], width: int) -> int:
    """Pack lane values (two's complement for negatives) into one integer.

    A value keeps its low ``width`` bits (as a ``width``-bit port assignment does).

    Args:
        values: integer lane values, lane 0 first.
        width: bits per lane, >= 1.

    Returns:
        The bus value.

    Raises:
        ValueError: ``width < 1``, or a lane value that is not an integer (a float, str,
            None, ...).

    Example:
        >>> hex(pack_lanes([1, -1, 2], 4))
        '0x2f1'
    """
    _check_width(width)
    vals = values if isinstance(values, np.ndarray) else list(values)
    lanes = np.asarray(vals)
    if width > 63 or (lanes.dtype != np.bool_ and not np.issubdtype(lanes.dtype, np.integer)):
        # lanes beyond int64, or not integer data by numpy's reading (ints too big for
        # int64 become object or float64; floats, str, None): lane by lane, Python ints
        seq = vals.ravel().tolist() if isinstance(vals, np.ndarray) else vals
        mask = (1 << width) - 1
        return sum((_lane(v) & mask) << (i * width) for i, v in enumerate(seq))
    lanes = lanes.astype(np.int64, copy=False)
    if lanes.size == 0:
        return 0
    if width in _NATIVE:
        return int.from_bytes(lanes.astype(_NATIVE[width]).tobytes(), "little")
    bits = ((lanes[:, None] >> np.arange(width)) & 1).astype(np.uint8)
    return int.from_bytes(np.packbits(bits.ravel(), bitorder="little").tobytes(), "little")


def unpack_lanes(bus: int, width: int, count: int, signed: bool = False) -> np.ndarray:
    """Inverse of :func:`pack_lanes`.

    Args:
        bus: the bus value.
        width: bits per lane.
        count: lanes.
        signed: interpret lanes as two's complement.

    Returns:
        int64 array of ``count`` lane values.

    Example:
        >>> unpack_lanes(0x2f1, 4, 3, signed=True).tolist()
        [1, -1, 2]
    """
    _check_width(width, count)
    if width > 62:
        mask = (1 << width) - 1
        out = [(bus >> (i * width)) & mask for i in range(count)]
        return np.array([to_signed(v, width) for v in out] if signed else out, dtype=object if width > 63 else np.int64)
    return unpack_rows([bus], width, count, signed)[0]


def unpack_rows(buses: list[int], width: int, count: int, signed: bool = False) -> np.ndarray:
    """:func:`unpack_lanes` of many buses at once: an ``(len(buses), count)`` int64 array.

    Example:
        >>> unpack_rows([0x2f1, 0x010], 4, 3, signed=True).tolist()
        [[1, -1, 2], [0, 1, 0]]
    """
    _check_width(width, count)
    if width > 62:
        return np.array([unpack_lanes(b, width, count, signed) for b in buses]).reshape(len(buses), count)
    nbits = width * count
    nbytes = (nbits + 7) // 8
    mask = (1 << nbits) - 1
    raw = np.frombuffer(b"".join((b & mask).to_bytes(nbytes, "little") for b in buses), np.uint8)
    raw = raw.reshape(len(buses), nbytes)
    if width in _NATIVE:
        lanes = raw.view(_NATIVE[width]).astype(np.int64).reshape(len(buses), count)
    else:
        bits = np.unpackbits(raw, axis=1, bitorder="little")[:, :nbits].reshape(len(buses), count, width)
        room = next(p for p in (8, 16, 32, 64) if p >= width)  # each lane widened to a native integer
        wide = np.zeros((len(buses), count, room), np.uint8)
        wide[:, :, :width] = bits
        lanes = np.packbits(wide, axis=2, bitorder="little").view(_NATIVE[room]).astype(np.int64)
        lanes = lanes.reshape(len(buses), count)
    if signed:
        lanes = np.where(lanes >> (width - 1) & 1, lanes - (np.int64(1) << width), lanes)
    return lanes


def _check_width(width: int, count: int = 0) -> None:
    """A lane width below 1 or a negative lane count is a ValueError naming it."""
    if width < 1:
        raise ValueError(f"width: a lane has at least 1 bit, got {width}")
    if count < 0:
        raise ValueError(f"count: a bus has 0 or more lanes, got {count}")


def _lane(v: object) -> int:
    """One lane value as a Python int; a non-integer (float, str, None) is a ValueError."""
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    return as_int(v, "values: a lane")


def to_signed(value: int, width: int) -> int:
    """Two's-complement reading of a ``width``-bit unsigned value."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value
