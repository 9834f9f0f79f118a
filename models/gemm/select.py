"""Kernel selection (docs/gemm.md section 3; block ``kernel_select``).

The candidates are the ROM ``GemmParams.candidates``; :func:`pick` applies a row cap and
chooses among them; :func:`select_kernel` runs the detector over ``m_max`` rows and the
flow of section 3.

Decisions where the contract is silent (written into docs/gemm.md section 3):

* The fallback of :func:`pick` (no balanced candidate) compares the N-block counts
  ``ceil(N / (z*V))`` and keeps the first candidate in ROM order on a tie: with a small
  ``N`` several ``z`` give the same count, and then the earlier (larger ``z``) one wins,
  not the smallest ``z``. ``N = 0``: every count is 0, nothing is balanced, the first
  valid candidate wins.
* ``limit_m`` with ``keep_all = 0`` (a single row already overflows the budget) has no
  pick: the program is ``OVERFLOW_COPY`` with ``keep = 0``.
* A refused selection (``lda <= 0``) gives ``prog``, ``m``, ``z``, ``keep`` 0, the
  refused detector outputs, ``err`` set and ``sel_cycles = 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .params import GemmParams
from .detect import ClosedForm, Det, closed_form, ld_conflict

__all__ = ["NORMAL", "NO_COPY", "OVERFLOW_COPY", "Selection", "better", "pick", "select_kernel"]

NORMAL, NO_COPY, OVERFLOW_COPY = (GemmParams.PROGS.index(p) for p in ("NORMAL", "NO_COPY", "OVERFLOW_COPY"))


@dataclass(frozen=True)
class Selection:
    """The selector's outputs.

    Attributes:
        prog: the program code (``GemmParams.PROGS``).
        m, z: the kernel block.
        keep: rows of an M-block read in place (the rest are copied with ``OVERFLOW_COPY``).
        det: the detector over ``m_max`` rows (``det.keep`` is ``keep_all``).
        cf: the closed-form outputs on ``(base_a, lda, m_max)``.
        sel_cycles: ``start`` to ``done`` (``visits + n_cand + 1``; 1 when refused).
        err: the selection was refused (``lda <= 0``).
    """

    prog: int
    m: int
    z: int
    keep: int
    det: Det
    cf: ClosedForm
    sel_cycles: int
    err: bool = False

    @property
    def copy(self) -> bool:
        """Copy is on exactly for ``OVERFLOW_COPY``."""
        return self.prog == OVERFLOW_COPY


def better(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """``r(a) > r(b)`` for ``r(m, z) = m*z / (m + z)``, exactly (cross-multiplied)."""
    (ma, za), (mb, zb) = a, b
    return ma * za * (mb + zb) > mb * zb * (ma + za)


def pick(cap: int, N: int, params: GemmParams) -> tuple[int, int] | None:
    """``pick(cap)`` of section 3: the best balanced candidate with ``m`` capped at
    ``cap``, else the valid one with the most N-blocks, else ``None``."""
    best = None  # best balanced (by r)
    most = None  # valid with the most N-blocks
    most_nb = -1
    for m, z in params.candidates:
        mm = min(m, cap)
        if mm < 1 or mm * z <= params.l_hw:
            continue
        nb = -(-N // (z * params.v))
        if nb >= params.ncores and (best is None or better((mm, z), best)):
            best = (mm, z)
        if nb > most_nb:
            most, most_nb = (mm, z), nb
    return best if best is not None else most


def select_kernel(N: int, lda: int, base_a: int, params: GemmParams, limit_m: bool = False) -> Selection:
    """The selection flow of section 3 for an N of ``N`` columns and an A at ``base_a``
    with leading dimension ``lda`` (elements)."""
    det = ld_conflict(base_a, lda, params.m_max, params)
    cf = closed_form(base_a, lda, params.m_max, params)
    if det.err:
        return Selection(0, 0, 0, 0, det, cf, 1, True)
    sel_cycles = det.visits + len(params.candidates) + 1
    keep_all = det.keep
    picked = pick(params.m_max, N, params)
    assert picked is not None  # every ROM entry is valid uncapped
    m, z = picked
    if keep_all >= m:
        prog = NO_COPY if cf.way_multiple or cf.way_fraction else NORMAL
        return Selection(prog, m, z, m, det, cf, sel_cycles)
    if limit_m:
        lim = pick(keep_all, N, params)
        if lim is not None:
            return Selection(NO_COPY, lim[0], lim[1], lim[0], det, cf, sel_cycles)
    return Selection(OVERFLOW_COPY, m, z, keep_all, det, cf, sel_cycles)
