"""Formats of the ``sparse`` family (docs/sparse.md section 2): sub-feature maps, the
descriptor, and the data, weight and output stream words.

Every width comes from :class:`~lockstep.models.sparse.params.SparseParams`; the word layouts
here list the fields in MSB-first order and are checked against its ``*_bits``
properties, so a width is never computed twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..record import as_int
from .params import SparseParams

__all__ = [
    "Desc",
    "SubFM",
    "decode",
    "encode",
    "encode_weights",
    "pack_data",
    "pack_desc",
    "pack_out",
    "pack_weights",
    "unpack_data",
    "unpack_desc",
    "unpack_out",
    "unpack_weights",
    "signed_range",
]

Entry = tuple[int, int, int]
Word = tuple[int, int, int, bool]


def signed_range(bits: int) -> tuple[int, int]:
    """``(lo, hi)`` of a ``bits``-bit two's-complement value."""
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


@dataclass(frozen=True)
class Desc:
    """A sub-feature-map descriptor (64 bits; fields of ``SparseParams.DESC_FIELDS``).

    Attributes:
        org_row: global row of the sub-FM's top-left element in the input map.
        org_col: global column of that element.
        h: height (legal: ``1..hmax``).
        w: width (legal: ``1..wmax``).
        nnz: number of data entries that follow.
        rsvd: reserved, must be 0.
    """

    org_row: int
    org_col: int
    h: int
    w: int
    nnz: int
    rsvd: int = 0


@dataclass
class SubFM:
    """A sub-feature map in the compressed (COO) format.

    Attributes:
        org_row: global row of the top-left element.
        org_col: global column of the top-left element.
        h: height.
        w: width.
        entries: ``(row, col, val)`` with local indices, strict raster order.
    """

    org_row: int
    org_col: int
    h: int
    w: int
    entries: list[Entry] = field(default_factory=list)

    @property
    def nnz(self) -> int:
        """Number of entries."""
        return len(self.entries)

    @property
    def desc(self) -> Desc:
        """The descriptor announcing this sub-FM (``NNZ = len(entries)``, ``RSVD = 0``)."""
        return Desc(self.org_row, self.org_col, self.h, self.w, self.nnz)


def encode(X: np.ndarray, org: tuple[int, int] = (0, 0), *, dense: bool = False) -> SubFM:
    """Compress a dense map into a :class:`SubFM`.

    Args:
        X: 2-D integer map, ``H x W`` with ``H, W >= 1``.
        org: ``(org_row, org_col)`` of the map's top-left element.
        dense: also emit the zeros (every position in raster order; dense mode).

    Returns:
        The sub-FM; its entries are the non-zeros (or all positions) in raster order.

    Raises:
        ValueError: if ``X`` is not a non-empty 2-D integer array.
    """
    X = _int_map(X, "X")
    h, w = X.shape
    if dense:
        rows, cols = np.divmod(np.arange(h * w), w)
    else:
        rows, cols = np.nonzero(X)  # row-major, i.e. raster order
    vals = X[rows, cols]
    return SubFM(int(org[0]), int(org[1]), h, w,
                 [(int(r), int(c), int(v)) for r, c, v in zip(rows, cols, vals)])


def decode(subfm: SubFM) -> np.ndarray:
    """The dense ``h x w`` int64 map of a sub-FM (absent entries are zero).

    Raises:
        ValueError: on an index outside ``h x w``, a position given twice or a value
            beyond int64.
    """
    X = np.zeros((subfm.h, subfm.w), dtype=np.int64)
    if not subfm.entries:
        return X
    try:
        e = np.array([t[:3] for t in subfm.entries], dtype=np.int64).reshape(-1, 3)
    except OverflowError:
        raise ValueError("decode: an entry's index or value does not fit int64") from None
    r, c, v = e[:, 0], e[:, 1], e[:, 2]
    if (r < 0).any() or (r >= subfm.h).any() or (c < 0).any() or (c >= subfm.w).any():
        raise ValueError(f"decode: an entry lies outside the {subfm.h} x {subfm.w} map")
    lin = r * subfm.w + c
    if np.unique(lin).size != lin.size:
        raise ValueError("decode: a position is given twice")
    X[r, c] = v
    return X


def encode_weights(Wk: np.ndarray, order: str = "raster", *, dense: bool = False) -> list[Entry]:
    """The non-zero weights ``(a, b, w)`` of a square kernel, in schedule order.

    Args:
        Wk: ``K x K`` integer kernel.
        order: ``"raster"`` (row by row) or ``"snake"`` (even rows left to right, odd
            rows right to left: the patent's (0,0), (0,1), (1,1), (1,0) for K = 2).
        dense: keep the zero weights too (dense mode).

    Raises:
        ValueError: on a non-square kernel or an unknown order.
    """
    Wk = _int_map(Wk, "Wk")
    K = Wk.shape[0]
    if Wk.shape != (K, K):
        raise ValueError(f"encode_weights: kernel must be square, got {Wk.shape}")
    if order not in ("raster", "snake"):
        raise ValueError(f"encode_weights: order must be 'raster' or 'snake', got {order!r}")
    out = []
    for a in range(K):
        cols = range(K) if order == "raster" or a % 2 == 0 else range(K - 1, -1, -1)
        out += [(a, b, int(Wk[a, b])) for b in cols if dense or Wk[a, b] != 0]
    return out


# ---- stream words -----------------------------------------------------------------
# A layout is the list of (field, bits, signed), MSB first; LAST is always the MSB.

def _layout(kind: str, params: SparseParams) -> list[tuple[str, int, bool]]:
    if kind == "data":
        lay, total = [("row", params.rb, False), ("col", params.cb, False), ("val", params.dw, True)], params.data_bits
    elif kind == "weights":
        lay, total = [("a", params.kb, False), ("b", params.kb, False), ("w", params.ww, True)], params.weight_bits
    else:
        lay, total = [("row", params.rb, False), ("col", params.cb, False), ("val", params.ow, True)], params.out_bits
    lay = [("last", 1, False)] + lay
    assert sum(b for _, b, _ in lay) == total, f"{kind} word layout disagrees with SparseParams"
    return lay


def _pack_fields(values: Sequence[int], lay: Sequence[tuple[str, int, bool]], what: str) -> int:
    word = 0
    for v, (name, bits, signed) in zip(values, lay):
        v = as_int(v, f"{what}: field {name}")
        lo, hi = signed_range(bits) if signed else (0, (1 << bits) - 1)
        if not lo <= v <= hi:
            raise ValueError(f"{what}: field {name}={v} does not fit {bits} {'signed ' if signed else ''}bits")
        word = (word << bits) | (v & ((1 << bits) - 1))
    return word


def _unpack_fields(word: int, lay: Sequence[tuple[str, int, bool]], what: str) -> list[int]:
    total = sum(b for _, b, _ in lay)
    word = as_int(word, what)
    if not 0 <= word < (1 << total):
        raise ValueError(f"{what}: word {word:#x} does not fit {total} bits")
    out = []
    for _, bits, signed in reversed(lay):
        v = word & ((1 << bits) - 1)
        word >>= bits
        if signed and v >> (bits - 1):
            v -= 1 << bits
        out.append(v)
    return out[::-1]


def _pack_stream(entries: Iterable[Sequence[int]], kind: str, params: SparseParams) -> list[int]:
    lay = _layout(kind, params)
    entries = list(entries)
    words = []
    for i, e in enumerate(entries):
        if len(e) not in (3, 4):
            raise ValueError(f"pack_{kind}: entry {i} must be (x, y, val) or (x, y, val, last), got {e!r}")
        last = bool(e[3]) if len(e) == 4 else i == len(entries) - 1
        words.append(_pack_fields((int(last), *e[:3]), lay, f"pack_{kind} entry {i}"))
    return words


def _unpack_stream(words: Iterable[int], kind: str, params: SparseParams) -> list[Word]:
    lay = _layout(kind, params)
    out = []
    for i, wd in enumerate(words):
        last, x, y, v = _unpack_fields(wd, lay, f"unpack_{kind} word {i}")
        out.append((x, y, v, bool(last)))
    return out


def _codec(kind: str, word: str, names: str):
    """The public ``pack_<kind>`` / ``unpack_<kind>`` pair of one stream."""

    def pack(entries: Iterable[Sequence[int]], params: SparseParams) -> list[int]:
        return _pack_stream(entries, kind, params)

    def unpack(words: Iterable[int], params: SparseParams) -> list[Word]:
        return _unpack_stream(words, kind, params)

    pack.__name__ = pack.__qualname__ = f"pack_{kind}"
    unpack.__name__ = unpack.__qualname__ = f"unpack_{kind}"
    pack.__doc__ = f"""{kind.capitalize()} stream words ``{word}``.

    Args:
        entries: ``{names}`` (LAST goes on the final entry only) or ``{names[:-1]}, last)``
            (LAST as given, e.g. for error streams).
        params: the widths.

    Returns:
        One int per entry.

    Raises:
        ValueError: if a field does not fit its width.
    """
    unpack.__doc__ = f"""Inverse of :func:`pack_{kind}`: ``{names[:-1]}, last)`` per word.

    Raises:
        ValueError: on a word wider than the stream's width.
    """
    return pack, unpack


pack_data, unpack_data = _codec("data", "{LAST, ROW[rb], COL[cb], VAL[dw]}", "(row, col, val)")
pack_weights, unpack_weights = _codec("weights", "{LAST, A[kb], B[kb], W[ww]}", "(a, b, w)")
pack_out, unpack_out = _codec("out", "{LAST, ROW[rb], COL[cb], VAL[ow]}", "(row, col, val)")


def _desc_layout() -> list[tuple[str, int, bool]]:
    return [(name, bits, False) for name, bits in SparseParams.DESC_FIELDS]


def pack_desc(desc: Desc | SubFM) -> int:
    """The 64-bit descriptor word (``SparseParams.DESC_FIELDS``, MSB first).

    Raises:
        ValueError: if a field does not fit its width.
    """
    d = desc.desc if isinstance(desc, SubFM) else desc
    return _pack_fields([getattr(d, name) for name, _ in SparseParams.DESC_FIELDS], _desc_layout(), "pack_desc")


def unpack_desc(word: int) -> Desc:
    """Inverse of :func:`pack_desc`.

    Raises:
        ValueError: on a word wider than 64 bits.
    """
    return Desc(*_unpack_fields(word, _desc_layout(), "unpack_desc"))


def _int_map(X: np.ndarray, what: str) -> np.ndarray:
    A = np.asarray(X)
    if A.ndim != 2 or A.size == 0:
        raise ValueError(f"{what}: need a non-empty 2-D array, got shape {A.shape}")
    if A.dtype.kind not in "iub":
        raise ValueError(f"{what}: need integer values, got dtype {A.dtype}")
    if A.dtype.kind == "u" and A.dtype.itemsize >= 8 and int(A.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"{what}: values must fit int64, got {int(A.max())}")
    return A.astype(np.int64)
