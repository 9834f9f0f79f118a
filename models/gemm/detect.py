"""Leading-dimension conflict detection (docs/gemm.md section 2; block ``ld_detect``).

:func:`ld_conflict` is the exact row walk (any base, any stride); :func:`closed_form` is
the combinational shortcut for the aligned case. The property tying them together
(``worst == worst_cf`` and ``keep == min(m, budget*period)`` when aligned with
``V*eb <= L``) is checked by the model tests against an independent brute force.

Decisions where the contract is silent (written into docs/gemm.md section 2):

* The walk's lines step back at a row start when the rows overlap (``s < V*eb``, i.e.
  ``ld < V``). A line is *new* when it is greater than the largest line counted so far;
  every line at or below it has already been counted, so *new* is exactly *not seen
  before*. The hardware keeps that largest line in a register.
* Addresses are exact integers: ``base + r*s`` does not wrap at ``2**aw`` (the walk of
  ``m_max`` rows may pass the end of memory; only its set mapping matters).
* ``ld`` is any integer ``>= 1`` that the tile accepts (``lda*eb < 2**aw``): the block's
  ``ld`` input is ``aw`` bits wide, not ``dimw`` (a legal ``lda`` may exceed ``K``'s
  range).
* Refused inputs (``ld <= 0``, ``m <= 0``, ``m > m_max``) give every output 0, the
  closed-form ones included, ``err`` set and ``done`` in cycle 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from .params import GemmParams

__all__ = ["ClosedForm", "Det", "closed_form", "ld_conflict"]


@dataclass(frozen=True)
class Det:
    """The exact detector's outputs for one ``(base, ld, m)``.

    Attributes:
        worst: the largest per-set count of distinct lines after all ``m`` rows.
        keep: leading rows whose lines fit the budget (``m`` when none overflows).
        conflict: ``keep < m``.
        visits: steps of the walk, ``sum_r (hi_r - lo_r + 1)``.
        counts: the per-set line counts after the walk (``sets`` entries).
        done_cycle: the cycle of ``done`` after ``start`` in cycle 0 (``visits + 1``;
            1 when refused).
        err: the inputs were refused (every other output 0).
    """

    worst: int
    keep: int
    conflict: bool
    visits: int
    counts: tuple[int, ...]
    done_cycle: int
    err: bool = False


@dataclass(frozen=True)
class ClosedForm:
    """The detector's combinational outputs.

    Attributes:
        way_multiple: the stride is a multiple of the way size (the patent's condition).
        way_fraction: the way size is a multiple of the stride.
        aligned: base and stride are line-aligned.
        period: sets visited by one line per row (``S / gcd(S, s/L)``), 0 when not aligned.
        worst_cf: ``ceil(m / period)`` when aligned and ``V*eb <= L``, else 0.
    """

    way_multiple: bool
    way_fraction: bool
    aligned: bool
    period: int
    worst_cf: int


def _refused(ld: int, m: int, params: GemmParams) -> bool:
    return ld <= 0 or m <= 0 or m > params.m_max


def ld_conflict(base: int, ld: int, m: int, params: GemmParams) -> Det:
    """The exact walk of section 2 over rows ``0..m-1`` of an A block at byte ``base``
    with leading dimension ``ld`` elements.

    Because the counts only grow, ``min(m', keep)`` is the ``keep`` of the first ``m'``
    rows: one walk over ``m_max`` rows answers every ``m``.
    """
    if base < 0:
        raise ValueError(f"ld_conflict: base={base} must be >= 0")
    S, L = params.sets, params.line
    if _refused(ld, m, params):
        return Det(0, 0, False, 0, (0,) * S, 1, True)
    s = ld * params.eb
    seg = params.v * params.eb
    budget = params.budget
    counts = [0] * S
    top = -1  # largest line counted so far
    keep = m
    visits = 0
    for r in range(m):
        a = base + r * s
        lo, hi = a // L, (a + seg - 1) // L
        visits += hi - lo + 1
        for x in range(max(lo, top + 1), hi + 1):  # the new lines of this row, in order
            c = counts[x % S] + 1
            counts[x % S] = c
            if c > budget and keep == m:
                keep = r
        top = max(top, hi)
    return Det(max(counts), keep, keep < m, visits, tuple(counts), visits + 1)


def closed_form(base: int, ld: int, m: int, params: GemmParams) -> ClosedForm:
    """The combinational outputs of section 2 (all 0 for refused inputs)."""
    if base < 0:
        raise ValueError(f"closed_form: base={base} must be >= 0")
    if _refused(ld, m, params):
        return ClosedForm(False, False, False, 0, 0)
    S, L = params.sets, params.line
    s = ld * params.eb
    wb = params.way_bytes
    aligned = base % L == 0 and s % L == 0
    period = S // gcd(S, s // L) if aligned else 0
    worst_cf = -(-m // period) if aligned and params.v * params.eb <= L else 0
    return ClosedForm(s % wb == 0, wb % s == 0, aligned, period, worst_cf)
