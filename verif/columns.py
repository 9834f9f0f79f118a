"""Transactions as columns: what lets a throughput scoreboard check a chunk in a few numpy
calls instead of a Python loop per transaction.

* :class:`Outs`: the output fields of many beats, one column per field, parsed in bulk
  from a recorder's fixed-width hex lines (:func:`parse_hex_lines`). A field of up to 62
  bits is an int64 column; a wider bus (a lane vector) is kept as its hex digits and
  unpacked to lanes on demand (:meth:`Outs.lanes`).
* :func:`ints`, :func:`signed`, :func:`lanes`: a unit's decoding of its output fields,
  written once for both modes: they take an :class:`Outs` (throughput) or a list of
  ``{field: int}`` dicts (the per-edge monitor's beats) and return the same arrays.
* :class:`Items`: a unit's stimulus as columns (``bits``, ``force``, ...), indexable like
  the list of item objects the per-edge sequence sends (``items[i]`` builds the object),
  sliceable without copying per transaction; :func:`col` reads one column of either.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import numpy as np

from .packing import unpack_rows

__all__ = ["Items", "Outs", "RecordFormatError", "col", "ints", "item_columns", "join_items", "lanes", "nibble_ints",
           "parse_hex_lines", "signed"]

_LUT = np.full(256, 255, np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _LUT[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _LUT[_c] = 10 + _i


class RecordFormatError(AssertionError):
    """A record line of the wrong length or layout, or a field with X or Z bits."""


def parse_hex_lines(data: bytes, digits: Sequence[int], names: Sequence[str], what: str) -> list[np.ndarray]:
    """Split fixed-width lines of space-separated hex fields into nibble matrices.

    Args:
        data: the file's bytes: lines of ``digits[0]`` hex digits, a space, ``digits[1]``
            digits, ..., each ended by ``\\n``.
        digits: hex digits of each field.
        names: each field's name (for messages).
        what: the file's name (for messages).

    Returns:
        One ``(lines, digits)`` uint8 matrix of nibble values per field, most
        significant digit first.

    Raises:
        RecordFormatError: a line of another length or layout (named by number), or a
            digit that is not hex (``x``/``z``: X or Z bits on an output), naming the
            line and field.
    """
    length = sum(digits) + len(digits)   # fields, separators and the newline
    if not data:
        return [np.zeros((0, d), np.uint8) for d in digits]
    raw = np.frombuffer(data, np.uint8)
    if len(raw) % length or raw[length - 1::length].tolist().count(10) != len(raw) // length:
        lines = data.split(b"\n")
        n = next((i for i, ln in enumerate(lines) if len(ln) != length - 1), len(lines) - 1)
        bad = lines[n] if n < len(lines) else b""
        raise RecordFormatError(f"{what}: line {n + 1} has {len(bad)} characters, not {length - 1}: {bad[:80]!r}")
    rows = raw.reshape(-1, length)
    nib = _LUT[rows]
    out, a = [], 0
    for name, d in zip(names, digits):
        m = nib[:, a:a + d]
        if (m == 255).any():
            r = int(np.flatnonzero((m == 255).any(axis=1))[0])
            tok = rows[r, a:a + d].tobytes().decode(errors="replace")
            raise RecordFormatError(f"{what} line {r + 1}: {name} is {tok!r}: X or Z bits on an output the recorder "
                                    f"took (line {rows[r, :min(length - 1, 40)].tobytes()!r}...)")
        if a + d < length - 1 and (rows[:, a + d] != 32).any():
            r = int(np.flatnonzero(rows[:, a + d] != 32)[0])
            raise RecordFormatError(f"{what} line {r + 1}: no space after {name}: {rows[r, :80].tobytes()!r}")
        out.append(m)
        a += d + 1
    return out


def nibble_ints(m: np.ndarray) -> np.ndarray:
    """The int64 values of ``(n, d)`` nibble rows, ``d <= 15`` (or 16 for values below 2**63)."""
    if m.shape[1] > 16:
        raise ValueError(f"{m.shape[1]} hex digits do not fit an int64")
    w = np.uint64(16) ** np.arange(m.shape[1] - 1, -1, -1, dtype=np.uint64)
    return (m.astype(np.uint64) * w).sum(axis=1, dtype=np.uint64).astype(np.int64)


class Outs:
    """Output fields of ``n`` beats, column by column.

    Args:
        nibbles: field -> ``(n, digits)`` hex digit values, most significant first.
        widths: field -> bits.
    """

    def __init__(self, nibbles: dict[str, np.ndarray], widths: dict[str, int]) -> None:
        self._nib, self.widths = nibbles, widths
        self._n = len(next(iter(nibbles.values()))) if nibbles else 0
        self._cache: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return self._n

    def ints(self, name: str) -> np.ndarray:
        """Field ``name`` as int64 values (up to 62 bits), else as Python ints (object)."""
        if name not in self._cache:
            m = self._nib[name]
            if self.widths[name] <= 62:
                self._cache[name] = nibble_ints(m)
            else:
                self._cache[name] = np.array([int(r.tobytes().hex()[1::2] or "0", 16) for r in m], dtype=object)
        return self._cache[name]

    def lanes(self, name: str, width: int, count: int, signed: bool = False) -> np.ndarray:
        """Field ``name`` as ``count`` lanes of ``width`` bits (lane 0 in the low bits):
        an ``(n, count)`` int64 array, two's complement when ``signed``."""
        key = f"{name}/{width}/{count}/{signed}"
        if key in self._cache:
            return self._cache[key]
        if width > 62:
            v = unpack_rows(self.ints(name).tolist(), width, count, signed)
        else:
            m = self._nib[name]
            n, d = m.shape
            total = width * count
            if width % 4 == 0 and 4 * d == total:   # whole digits per lane: combine the digits
                digs = m.reshape(n, count, width // 4)[:, ::-1, :].astype(np.int64)
                v = digs @ (np.int64(16) ** np.arange(width // 4 - 1, -1, -1, dtype=np.int64))
            else:
                bits = ((m[:, :, None] >> np.array([3, 2, 1, 0], np.uint8)) & 1).reshape(n, 4 * d)
                if total > 4 * d:
                    bits = np.concatenate([np.zeros((n, total - 4 * d), np.uint8), bits], axis=1)
                bits = bits[:, bits.shape[1] - total:].reshape(n, count, width)[:, ::-1, :]
                v = bits.astype(np.int64) @ (np.int64(1) << np.arange(width - 1, -1, -1, dtype=np.int64))
            if signed:
                v = np.where(v >> (width - 1) & 1, v - (np.int64(1) << width), v)
        self._cache[key] = v
        return v

    def row(self, i: int) -> dict[str, int]:
        """Beat ``i``'s fields as Python ints (for messages and the stream dump)."""
        return {f: int(self.ints(f)[i]) for f in self._nib}

    def rows(self) -> list[dict[str, int]]:
        """Every beat's fields (the per-edge form)."""
        cols = {f: self.ints(f).tolist() for f in self._nib}
        return [dict(zip(cols, vals)) for vals in zip(*cols.values())]

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return Outs({f: m[i] for f, m in self._nib.items()}, self.widths)
        return self.row(i)

    def __iter__(self) -> Iterator[dict[str, int]]:
        return iter(self.rows())

    @staticmethod
    def concat(parts: Sequence[Outs]) -> Outs:
        """One :class:`Outs` of several (the beats in order)."""
        if len(parts) == 1:
            return parts[0]
        return Outs({f: np.concatenate([p._nib[f] for p in parts]) for f in parts[0]._nib}, parts[0].widths)


def ints(outs: Outs | Sequence[dict[str, int]], name: str) -> np.ndarray:
    """Field ``name`` of every beat as int64 (either form of outputs)."""
    if isinstance(outs, Outs):
        return outs.ints(name)
    return np.array([o[name] for o in outs], dtype=np.int64)


def signed(outs: Outs | Sequence[dict[str, int]], name: str, width: int) -> np.ndarray:
    """Field ``name`` read as ``width``-bit two's complement (``width <= 64``), int64
    (either form)."""
    if width > 64:
        raise ValueError(f"{name}: a {width}-bit field does not fit an int64")
    if isinstance(outs, Outs):
        v = outs.ints(name)   # int64, or Python ints above 62 bits
        u = v.astype(np.uint64) if v.dtype != object else np.array(v.tolist(), dtype=np.uint64)
    else:
        u = np.array([o[name] for o in outs], dtype=np.uint64)
    if width < 64:   # offset binary: subtracting the offset sign-extends
        u = (u & np.uint64((1 << width) - 1)) ^ np.uint64(1 << (width - 1))
        return u.astype(np.int64) - np.int64(1 << (width - 1))
    return u.view(np.int64)


def lanes(outs: Outs | Sequence[dict[str, int]], name: str, width: int, count: int, signed: bool = False) -> np.ndarray:
    """Field ``name`` as ``(n, count)`` lanes of ``width`` bits (either form)."""
    if isinstance(outs, Outs):
        return outs.lanes(name, width, count, signed)
    return unpack_rows([o[name] for o in outs], width, count, signed=signed)


class Items:
    """A unit's stimulus as columns, read like the list of item objects it stands for.

    Args:
        make: builds one item from its column values (the item class).
        columns: field -> one value (row) per item, all of one length.

    ``items[i]`` is ``make(**{field: column[i]})``; ``items[a:b]`` is an :class:`Items`
    over views of the columns; ``items.bits`` is the ``bits`` column.
    """

    def __init__(self, make: Callable[..., Any], **columns: Any) -> None:
        lens = {k: len(v) for k, v in columns.items()}
        if len(set(lens.values())) > 1:
            raise ValueError(f"item columns of different lengths: {lens}")
        self._make, self._cols = make, columns
        self._n = next(iter(lens.values())) if lens else 0

    def __len__(self) -> int:
        return self._n

    def __getattr__(self, name: str) -> Any:
        cols = self.__dict__.get("_cols", {})
        if name in cols:
            return cols[name]
        raise AttributeError(name)

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return Items(self._make, **{k: v[i] for k, v in self._cols.items()})
        if not -self._n <= i < self._n:
            raise IndexError(i)
        return self._make(**{k: _cell(v, i) for k, v in self._cols.items()})

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(self._n))

    def take(self, order: Sequence[int]) -> Items:
        """The rows in ``order`` (a permutation, or any selection of row indices)."""
        idx = np.asarray(order, dtype=np.intp)
        return Items(self._make, **{k: v[idx] if isinstance(v, np.ndarray) else [v[i] for i in idx]
                                    for k, v in self._cols.items()})

    @staticmethod
    def concat(parts: Sequence[Items]) -> Items:
        """One :class:`Items` of several (the columns joined)."""
        if len(parts) == 1:
            return parts[0]
        first = parts[0]
        cols = {}
        for k, v in first._cols.items():
            vals = [p._cols[k] for p in parts]
            cols[k] = np.concatenate(vals) if isinstance(v, np.ndarray) else [x for p in vals for x in p]
        return Items(first._make, **cols)


def join_items(parts: Sequence[Items | Sequence[Any]]) -> Items | list[Any]:
    """Several draws of items as one (:meth:`Items.concat`, or one list)."""
    if parts and all(isinstance(p, Items) for p in parts):
        return Items.concat(parts)
    return [it for p in parts for it in p]


def _cell(column: Any, i: int) -> Any:
    """Row ``i`` of a column: a Python scalar for a 1-D numpy column, else the row (a view)."""
    if isinstance(column, np.ndarray) and column.ndim == 1 and column.dtype != object:
        return column[i].item()
    return column[i]


def item_columns(items: Items | Sequence[Any], names: Sequence[str]) -> dict[str, np.ndarray]:
    """Attributes ``names`` of every item, column by column (either form of items)."""
    return {k: col(items, k) for k in names}


def col(items: Items | Sequence[Any], name: str, dtype: Any = None) -> np.ndarray:
    """Attribute ``name`` of every item as an array (either form of items)."""
    if isinstance(items, Items):
        v = getattr(items, name)
        return np.asarray(v, dtype=dtype) if dtype is not None else np.asarray(v)
    if dtype is object:   # one cell per item, whatever the values are (tuples too)
        out = np.empty(len(items), dtype=object)
        for i, it in enumerate(items):
            out[i] = getattr(it, name)
        return out
    return np.array([getattr(it, name) for it in items], dtype=dtype)
