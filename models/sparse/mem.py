"""Write-side checks of the feature-map memory unit and the weight memory
(docs/sparse.md section 7): which entries are stored, which are dropped, and which
sticky error bits rise. The testbench compares the RTL's stored content and flags with
:func:`load_data` and :func:`load_weights` entry by entry.

Decisions where the contract is silent (written into docs/sparse.md section 7):

* The checks run in a fixed priority on each entry: OVERFLOW (the entry's number in the
  stream, counted from 0 over every entry received, is ``>= depth``), then IDX_OOB,
  then ORDER; the first that holds drops the entry and no later check looks at it. A
  stored entry with ``val == 0`` raises ZERO (not in dense mode). NNZ is checked on
  every entry, dropped or not. The weight memory likewise: W_OVERFLOW (entry number
  ``>= kmax**2``), W_IDX_OOB, W_DUP (an ``(a, b)`` already stored), then store and
  W_ZERO.
* A refused descriptor (DESC) raises DESC only: the entries up to LAST are consumed and
  dropped without further checks.
* ``NNZ = 0``: the load is complete with the descriptor; no entry belongs to it.
* Otherwise the load ends with the first entry that carries LAST; entries after an
  early LAST are not part of it; without LAST the load has not ended.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .params import SparseParams
from .format import Desc, SubFM, pack_data, pack_weights, unpack_data, unpack_desc, unpack_weights

__all__ = ["Load", "MEM_ERR", "STU_ERR", "W_ERR", "err_names", "load_data", "load_weights"]

#: Bit masks of the sticky error flags, by name (bit ``i`` is the ``i``-th name).
MEM_ERR: dict[str, int] = {n: 1 << i for i, n in enumerate(SparseParams.MEM_ERR_NAMES)}
W_ERR: dict[str, int] = {n: 1 << i for i, n in enumerate(SparseParams.W_ERR_NAMES)}
STU_ERR: dict[str, int] = {n: 1 << i for i, n in enumerate(SparseParams.STU_ERR_NAMES)}


def err_names(bits: int, names: Sequence[str]) -> list[str]:
    """The names of the set bits of an error vector (``names`` is e.g. ``MEM_ERR_NAMES``)."""
    return [n for i, n in enumerate(names) if bits >> i & 1]


@dataclass
class Load:
    """What a memory took from one stream.

    Attributes:
        entries: the stored entries, ``(row, col, val)`` or ``(a, b, w)``, in address order.
        err: the sticky error bits the load raised.
        consumed: stream entries that belong to the load (up to and including LAST).
        ended: the load is complete (LAST seen, or a descriptor with ``NNZ = 0``).
        dropped: stream positions (0-based) of the entries that were not stored.
    """

    entries: list[tuple[int, int, int]]
    err: int
    consumed: int
    ended: bool
    dropped: list[int]


def _items(stream: Iterable, pack, unpack, params: SparseParams) -> list[tuple[int, int, int, bool]]:
    """Words, or entry tuples (through their words, so every field is checked) ->
    ``(x, y, val, last)``."""
    stream = list(stream)
    if not all(isinstance(s, (int, np.integer)) for s in stream):
        stream = pack(stream, params)
    return unpack(stream, params)


def load_data(desc: Desc | SubFM | int, stream: Iterable, params: SparseParams, dense: bool = False) -> Load:
    """The feature-map memory unit's write side: one descriptor and its entries.

    Args:
        desc: the descriptor (a :class:`Desc`, a :class:`SubFM` or the 64-bit word).
        stream: data words (ints), or ``(row, col, val[, last])`` tuples.
        params: ``hmax``, ``wmax``, ``depth``, ``dw`` and the word widths.
        dense: dense mode (a zero value is not an error).

    Returns:
        The :class:`Load` (stored entries, ``MEM_ERR`` bits, consumed count).

    Raises:
        ValueError: on a word, index or value that does not fit the stream format.
    """
    d = unpack_desc(desc) if isinstance(desc, int) else desc.desc if isinstance(desc, SubFM) else desc
    refused = d.rsvd != 0 or not 1 <= d.h <= params.hmax or not 1 <= d.w <= params.wmax
    if d.nnz == 0:
        return Load([], MEM_ERR["DESC"] if refused else 0, 0, True, [])
    items = _items(stream, pack_data, unpack_data, params)
    stored: list[tuple[int, int, int]] = []
    dropped: list[int] = []
    err, last_lin, ended, n = 0, -1, False, 0
    for n, (row, col, val, last) in enumerate(items):
        lin = row * d.w + col
        if refused:
            drop = "DESC"
        elif n >= params.depth:
            drop = "OVERFLOW"
        elif row >= d.h or col >= d.w:
            drop = "IDX_OOB"
        elif lin <= last_lin:
            drop = "ORDER"
        else:
            drop = None
            stored.append((row, col, val))
            last_lin = lin
            if val == 0 and not dense:
                err |= MEM_ERR["ZERO"]
        if drop:
            err |= MEM_ERR[drop]
            dropped.append(n)
        if not refused and last != (n == d.nnz - 1):
            err |= MEM_ERR["NNZ"]
        if last:
            ended = True
            break
    return Load(stored, err, n + 1 if items else 0, ended, dropped)


def load_weights(stream: Iterable, k: int, params: SparseParams, dense: bool = False) -> Load:
    """The weight memory's write side for a CONV job with kernel size ``k``.

    Args:
        stream: weight words (ints), or ``(a, b, w[, last])`` tuples; any order.
        k: the kernel size K of the job (``a, b < K``).
        params: ``kmax``, ``ww`` and the word widths.
        dense: dense mode (a zero weight is not an error).

    Returns:
        The :class:`Load` with the stored weights in stream order and ``W_ERR`` bits.

    Raises:
        ValueError: on a word, index or value that does not fit the stream format.
    """
    items = _items(stream, pack_weights, unpack_weights, params)
    stored: list[tuple[int, int, int]] = []
    seen: set[tuple[int, int]] = set()
    dropped: list[int] = []
    err, ended, n = 0, False, 0
    for n, (a, b, w, last) in enumerate(items):
        if n >= params.kmax * params.kmax:
            drop = "W_OVERFLOW"
        elif a >= k or b >= k:
            drop = "W_IDX_OOB"
        elif (a, b) in seen:
            drop = "W_DUP"
        else:
            drop = None
            stored.append((a, b, w))
            seen.add((a, b))
            if w == 0 and not dense:
                err |= W_ERR["W_ZERO"]
        if drop:
            err |= W_ERR[drop]
            dropped.append(n)
        if last:
            ended = True
            break
    return Load(stored, err, n + 1 if items else 0, ended, dropped)
