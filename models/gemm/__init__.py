"""Golden models of the ``gemm`` family: a GEMM tile that avoids the cache conflicts of
bad leading dimensions (spec 003).

The contract is ``docs/gemm.md``; this module is the SPEC the generated RTL is checked
against. numpy and the standard library only; every value is an exact integer. Every
size comes from :class:`~lockstep.models.gemm.params.GemmParams`.

Contents (all importable from here; the code lives in ``detect.py``, ``select.py``,
``trace.py``, ``cache.py`` and ``run.py``):

* conflict detection (section 2): :func:`ld_conflict` -> :class:`Det` (the exact walk),
  :func:`closed_form` -> :class:`ClosedForm`;
* kernel selection (section 3): :func:`pick`, :func:`better`, :func:`select_kernel` ->
  :class:`Selection`; the program codes :data:`NORMAL`, :data:`NO_COPY`,
  :data:`OVERFLOW_COPY`;
* the access trace (section 4): :func:`gen_trace`, :func:`build_trace` ->
  :class:`Trace`; the kind codes :data:`A_LD` .. :data:`C_WR`;
* the cache (section 5): :class:`CacheSim`, :func:`classify` -> :class:`ThreeC`;
* the tile (sections 6-10): :class:`GemmCfg`, :func:`check_cfg`, :func:`resolve`,
  :func:`extents`, :data:`ERR`, :func:`err_names`, :func:`gemm_ref`, :func:`cycles`,
  :func:`run` -> :class:`Run`, :func:`load_matrix`, :func:`store_matrix`.

Where the contract is silent, each submodule's docstring lists the decision it takes;
docs/gemm.md records the same decisions ("Golden model decisions").
"""

from __future__ import annotations

from .cache import CacheSim, ThreeC, classify
from .detect import ClosedForm, Det, closed_form, ld_conflict
from .run import (
    ERR, GemmCfg, Kernel, Resolved, Run, check_cfg, cycles, err_names, extents, gemm_ref, gen_trace,
    load_matrix, resolve, run, store_matrix,
)
from .select import NO_COPY, NORMAL, OVERFLOW_COPY, Selection, better, pick, select_kernel
from .trace import A_LD, B_LD, BUF_LD, C_WR, COPY_RD, COPY_WR, Trace, build_trace
from .params import GemmParams

__all__ = [
    "GemmParams",
    "A_LD",
    "BUF_LD",
    "B_LD",
    "COPY_RD",
    "COPY_WR",
    "C_WR",
    "ERR",
    "NORMAL",
    "NO_COPY",
    "OVERFLOW_COPY",
    "CacheSim",
    "ClosedForm",
    "Det",
    "GemmCfg",
    "Kernel",
    "Resolved",
    "Run",
    "Selection",
    "ThreeC",
    "Trace",
    "better",
    "build_trace",
    "check_cfg",
    "classify",
    "closed_form",
    "cycles",
    "err_names",
    "extents",
    "gemm_ref",
    "gen_trace",
    "ld_conflict",
    "load_matrix",
    "pick",
    "resolve",
    "run",
    "select_kernel",
    "store_matrix",
]
