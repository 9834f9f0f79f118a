"""The tag-only set-associative LRU cache model and the 3C miss split (docs/gemm.md
section 5; block ``sa_cache``).

:class:`CacheSim` is an exact true-LRU cache: one ``OrderedDict`` per set, least
recently used first. :meth:`CacheSim.replay` expands a trace into its lookups with numpy
and runs one short Python step per lookup (about 10**6 lookups per second).

Decisions where the contract is silent (written into docs/gemm.md section 5):

* A lookup with ``kind=None`` updates the cache, the totals and ``evictions``, but no
  per-kind counter.
* :func:`classify` counts compulsory misses as first touches of a line in the given
  trace from a cold cache; it also splits each class by kind.
* ``sets`` need not be a power of two in the model (line ``x`` maps to set ``x % sets``).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .params import GemmParams
from .trace import Trace

__all__ = ["CacheSim", "ThreeC", "classify"]

NK = len(GemmParams.KINDS)


def _as_trace(trace) -> Trace:
    return trace if isinstance(trace, Trace) else Trace.from_list(trace)


class CacheSim:
    """A ``sets x ways`` true-LRU, write-allocate, tag-only cache of ``line_bytes`` lines.

    Counters (cleared by :meth:`clear`, and with the state by :meth:`reset`):
    ``lookups[kind]``, ``hits[kind]``, ``misses[kind]`` (lists indexed by the
    ``GemmParams.KINDS`` code), the totals ``n_lookups``, ``n_hits``, ``n_misses`` (every
    lookup, ``kind=None`` included) and ``evictions`` (valid lines evicted).
    """

    def __init__(self, sets: int, ways: int, line_bytes: int) -> None:
        if sets < 1 or ways < 1 or line_bytes < 1:
            raise ValueError(f"CacheSim({sets}, {ways}, {line_bytes}): every size must be >= 1")
        self.sets, self.ways, self.line = sets, ways, line_bytes
        self.reset()

    # ---- state -----------------------------------------------------------------------
    def reset(self) -> None:
        """``rst``: every way invalid, every counter 0."""
        self._set = [OrderedDict() for _ in range(self.sets)]
        self.clear()

    def clear(self) -> None:
        """``clr``: every counter 0; the lines stay."""
        self.lookups = [0] * NK
        self.hits = [0] * NK
        self.misses = [0] * NK
        self.n_lookups = self.n_hits = self.n_misses = 0
        self.evictions = 0

    def contents(self, s: int) -> list[int]:
        """The valid lines of set ``s``, least recently used first."""
        return list(self._set[s])

    # ---- lookups ---------------------------------------------------------------------
    def _count(self, kinds: np.ndarray | None, hit: np.ndarray) -> None:
        n, h = len(hit), int(np.count_nonzero(hit))
        self.n_lookups += n
        self.n_hits += h
        self.n_misses += n - h
        if kinds is not None and n:
            k = np.asarray(kinds, np.int64)
            if k.min() < 0 or k.max() >= NK:
                raise ValueError(f"CacheSim: kind codes must be in 0..{NK - 1}")
            lk = np.bincount(k, minlength=NK)
            hk = np.bincount(k, weights=hit, minlength=NK).astype(np.int64)
            for i in range(NK):
                self.lookups[i] += int(lk[i])
                self.hits[i] += int(hk[i])
                self.misses[i] += int(lk[i] - hk[i])

    def _run(self, lines: list[int]) -> np.ndarray:
        sets, S, W = self._set, self.sets, self.ways
        hit = bytearray(len(lines))
        ev = 0
        i = 0
        for x in lines:
            od = sets[x % S]
            if x in od:
                od.move_to_end(x)
                hit[i] = 1
            else:
                if len(od) >= W:
                    od.popitem(last=False)
                    ev += 1
                od[x] = None
            i += 1
        self.evictions += ev
        return np.frombuffer(bytes(hit), np.uint8).astype(bool)

    def access(self, addr: int, kind: int | None = None) -> bool:
        """One lookup of the line holding byte ``addr``; True on a hit."""
        if kind is not None and not 0 <= kind < NK:
            raise ValueError(f"CacheSim.access: kind {kind} not in 0..{NK - 1}")
        hit = self._run([addr // self.line])
        self._count(None if kind is None else np.array([kind]), hit)
        return bool(hit[0])

    def request(self, kind: int | None, addr: int, nbytes: int) -> list[bool]:
        """A request's lookups (lines ``addr // L .. (addr + nbytes - 1) // L``, in order)."""
        if nbytes < 1:
            raise ValueError(f"CacheSim.request: nbytes={nbytes} must be >= 1")
        lines = list(range(addr // self.line, (addr + nbytes - 1) // self.line + 1))
        hit = self._run(lines)
        self._count(None if kind is None else np.full(len(lines), kind), hit)
        return hit.tolist()

    def replay(self, trace) -> np.ndarray:
        """Every lookup of a trace (a :class:`Trace` or ``(kind, addr, nbytes)`` tuples),
        in order; returns the hit of each lookup (bool array)."""
        t = _as_trace(trace)
        if len(t) and int(t.nbytes.min()) < 1:
            raise ValueError("CacheSim.replay: every request needs nbytes >= 1")
        lines, kinds = t.lookups(self.line)
        hit = self._run(lines.tolist())
        self._count(kinds, hit)
        return hit


@dataclass(frozen=True)
class ThreeC:
    """The 3C split of a trace's misses from a cold cache.

    Attributes:
        lookups, misses: totals of the set-associative cache.
        compulsory: first touches of a line.
        capacity: misses of a fully associative LRU cache of ``sets*ways`` lines, minus
            the compulsory ones.
        conflict: the rest (negative when the fully associative cache does worse).
        by_kind: for each kind name, ``(lookups, misses, compulsory, capacity, conflict)``.
    """

    lookups: int
    misses: int
    compulsory: int
    capacity: int
    conflict: int
    by_kind: dict[str, tuple[int, int, int, int, int]]


def classify(trace, sets: int, ways: int, line: int) -> ThreeC:
    """The 3C split of section 5 for ``trace`` replayed on a cold cache."""
    t = _as_trace(trace)
    lines, kinds = t.lookups(line)
    sa, fa = CacheSim(sets, ways, line), CacheSim(1, sets * ways, line)
    miss_sa = ~sa.replay(t)
    miss_fa = ~fa.replay(t)
    first = np.zeros(len(lines), bool)
    first[np.unique(lines, return_index=True)[1]] = True
    k = kinds.astype(np.int64)

    def per(mask: np.ndarray) -> np.ndarray:
        return np.bincount(k[mask], minlength=NK)

    lk, ms, cm, mf = np.bincount(k, minlength=NK), per(miss_sa), per(first), per(miss_fa)
    by_kind = {GemmParams.KINDS[i]: (int(lk[i]), int(ms[i]), int(cm[i]), int(mf[i] - cm[i]), int(ms[i] - mf[i]))
               for i in range(NK)}
    comp, nsa, nfa = int(first.sum()), int(miss_sa.sum()), int(miss_fa.sum())
    return ThreeC(len(lines), nsa, comp, nfa - comp, nsa - nfa, by_kind)
