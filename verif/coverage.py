"""Functional coverage: a thin, data-driven layer over cocotb-coverage.

cocotb-coverage declares cover points as decorators fixed at import time; bins here
depend on the DUT's parameters, so :class:`Covergroup` builds the decorated sampling
function at run time from ``point(name, xf, bins)`` calls. The database is the global
``cocotb_coverage.coverage.coverage_db``, exported per test to YAML (merged across a
regression by the report scripts).
"""

from __future__ import annotations

from collections import Counter
from operator import itemgetter
from pathlib import Path
from typing import Any, Callable

import numpy as np
from cocotb_coverage.coverage import CoverPoint, coverage_db

__all__ = ["Covergroup"]


class Covergroup:
    """A named set of cover points sampled together with one transaction.

    Args:
        name: dotted group name (``"bfp.quantizer"``); points are ``<name>.<point>``.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.points: list[str] = []
        self._sample: Callable[[Any], None] = lambda t: None
        self._xf: dict[str, Callable[[Any], Any]] = {}

    def point(self, name: str, xf: Callable[[Any], Any], bins: list[Any]) -> None:
        """Add a cover point.

        Args:
            name: point name inside the group.
            xf: maps a sampled transaction to a bin value.
            bins: the bins (each must be hit at least once).
        """
        full = f"{self.name}.{name}"
        self.points.append(full)
        self._sample = CoverPoint(full, xf=xf, bins=list(bins))(self._sample)
        self._xf[full] = xf

    def sample(self, txn: Any) -> None:
        """Sample every point with one transaction."""
        self._sample(txn)

    def sample_batch(self, txns: list[dict[str, Any]]) -> None:
        """Sample every point with each of ``txns``: the same hits as :meth:`sample` per
        transaction, counted per bin in one pass (a throughput run samples millions).

        Transactions with equal fields hit the same bins, so the distinct ones are
        counted first (at C speed) and each point's transform runs once per distinct
        transaction, not once per transaction.
        """
        if not txns:
            return
        keys = list(txns[0])
        try:
            distinct = Counter(map(itemgetter(*keys), txns)) if len(keys) > 1 else None
        except (KeyError, TypeError):  # unequal keys or unhashable values: one by one
            distinct = None
        if distinct is None:
            weighted = [(t, 1) for t in txns]
        else:
            weighted = [(dict(zip(keys, combo)), n) for combo, n in distinct.items()]
        self._add(weighted)

    def sample_columns(self, cols: dict[str, Any]) -> None:
        """:meth:`sample_batch` of transactions given column by column (field -> one value
        per transaction), with no per-transaction Python object: each point's transform
        runs once per distinct combination of the fields it reads (found by running it
        on one transaction with a dict that notes its reads; a later read outside them
        falls back to every field), each combination weighted by its count."""
        names = list(cols)
        if not names:
            return
        arrays = [np.asarray(cols[k]) for k in names]
        n = len(arrays[0])
        if n == 0:
            return
        if any(len(a) != n for a in arrays):
            raise ValueError(f"cover columns of unequal lengths: {[len(a) for a in arrays]}")
        codes, uniques = {}, {}
        try:
            for k, a in zip(names, arrays):
                u, inv = np.unique(a, return_inverse=True)
                uniques[k], codes[k] = u.tolist(), inv.reshape(n)
        except TypeError:  # values numpy cannot order (dicts...): row by row
            self.sample_batch([dict(zip(names, row)) for row in zip(*(a.tolist() for a in arrays))])
            return
        first = {k: uniques[k][codes[k][0]] for k in names}
        for full, xf in self._xf.items():
            probe = _Reads(first)
            xf(probe)
            keys = [k for k in names if k in probe.read] or names[:1]
            try:
                self._count(full, xf, self._distinct(keys, codes, uniques), strict=True)
            except KeyError:  # the transform read a field its first call did not
                self._count(full, xf, self._distinct(names, codes, uniques))

    @staticmethod
    def _distinct(keys: list[str], codes: dict[str, np.ndarray], uniques: dict[str, list]) -> list[tuple[dict, int]]:
        """The distinct combinations of ``keys`` with their counts."""
        sizes = [len(uniques[k]) for k in keys]
        if float(np.prod(sizes, dtype=float)) >= 2.0**62:  # too many combinations for one int64 key
            rows, counts = np.unique(np.stack([codes[k] for k in keys], axis=1), axis=0, return_counts=True)
            return [({k: uniques[k][c] for k, c in zip(keys, r)}, int(m)) for r, m in zip(rows.tolist(), counts)]
        key = np.zeros(len(codes[keys[0]]), np.int64)
        for k, size in zip(keys, sizes):  # mixed radix: one integer per combination
            key = key * size + codes[k]
        combos, counts = np.unique(key, return_counts=True)
        out = []
        for combo, m in zip(combos.tolist(), counts.tolist()):
            row = {}
            for k, size in zip(reversed(keys), reversed(sizes)):
                combo, c = divmod(combo, size)
                row[k] = uniques[k][c]
            out.append((row, m))
        return out

    def _add(self, weighted: list[tuple[Any, int]]) -> None:
        """Count each ``(transaction, times)`` into every point's bins."""
        for full, xf in self._xf.items():
            self._count(full, xf, weighted)

    @staticmethod
    def _count(full: str, xf: Callable[[Any], Any], weighted: list[tuple[Any, int]], strict: bool = False) -> None:
        """Add the bins ``xf`` maps each ``(transaction, times)`` to into point ``full``."""
        counts: Counter = Counter()
        for t, n in weighted:
            counts[xf(_Strict(t) if strict else t)] += n
        item = coverage_db[full]
        before = item.coverage
        for b in item._hits:  # cocotb-coverage's bins; equality is its default relation
            item._hits[b] += counts.get(b, 0)
        item._parent._update_coverage(item.coverage - before)

    def summary(self) -> dict[str, Any]:
        """Coverage figures: per point (hits per bin) and the group percentage."""
        group = coverage_db[self.name]
        points = {}
        for full in self.points:
            item = coverage_db[full]
            points[full] = {str(k): int(v) for k, v in item.detailed_coverage.items()}
        return {
            "functional_coverage": round(float(group.cover_percentage), 2),
            "cover_points": points,
            "holes": sorted(f"{p}={b}" for p, bins in points.items() for b, h in bins.items() if h == 0),
        }

    def export(self, folder: Path) -> Path:
        """Write the whole coverage database to ``<folder>/coverage.yml``."""
        path = Path(folder) / "coverage.yml"
        coverage_db.export_to_yaml(str(path))
        return path


class _Reads(dict):
    """A transaction that notes which fields are read."""

    def __init__(self, t: dict) -> None:
        super().__init__(t)
        self.read: set[str] = set()

    def __getitem__(self, k: str) -> Any:
        self.read.add(k)
        return super().__getitem__(k)

    def get(self, k: str, default: Any = None) -> Any:
        self.read.add(k)
        return super().get(k, default)


class _Strict(dict):
    """A projection of a transaction: reading a field outside it raises KeyError."""

    def get(self, k: str, default: Any = None) -> Any:
        if k not in self:
            raise KeyError(k)
        return super().get(k)
