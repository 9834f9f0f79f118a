"""pyuvm environment of ``host_engine`` (the kernels, the memory arbiter and the device
memory behind the host front end; docs/host.md sections 2, 3, 8, 9, 11).

Python plays the front end. The run is a list of *steps* generated up front from the
seed (the ``scenario`` option picks them, :func:`make_steps`); a step is one task, or two
tasks on the two kernels at once (``n_kernels = 2``). For each step :class:`EngineBfm`

* optionally pulses ``rst`` (then the memory, the DMA counters and the test registers
  must read 0);
* writes the test registers (LFSR seed, ``bp_rate``, ``lat_rate``, error window) and
  reads them back;
* loads A and W (int8 or int16, random with extreme values) and poisons every word of
  each output range through the DMA port, one word per cycle;
* drives each command (fields from a :class:`~lockstep.models.host.Descriptor`; word
  addresses by docs/host.md section 11: ``act_addr >> 2``, ``(WGT_BASE + wgt_off) >> 2``,
  ``out_addr >> 2``) with its one-hot ``cmd_valid`` (cycle 0 ends at the taking edge);
  optionally raises ``k_abort`` (the flush signal) in a chosen busy cycle, for one
  cycle or until the completion;
* waits for each kernel's ``cpl_valid`` edge (monitors wake on changes of ``k_busy``,
  ``cpl_valid``, ``rd_beat``, ``wr_beat`` and ``k_stall`` only), holds ``cpl_ready`` low for a few cycles (optionally
  pulsing ``k_abort`` then: a held completion stays OK), takes the completion;
* reads each output range back through the DMA port with ``dma_re`` (one counted word
  per cycle), then the whole memory without ``dma_re``, then the DMA byte counters.

:class:`EngineScoreboard` replays every step on a golden memory image
(:func:`~lockstep.models.host.write_mat`, :func:`~lockstep.models.host.kernel_ref`):

* each task's status: ABORTED with a flush in a busy cycle, MEM_ERR when the error window
  meets a word the task reads or writes, else OK;
* OK: the result range bit-exact; every other word of the memory equal to the golden image
  (loads, poison and earlier results); a MEM_ERR or ABORTED task's output range is
  undefined (the image adopts the DUT's words there), nothing else may change;
* a MEM_ERR task's output words inside the error window keep their poison (writes there
  are dropped);
* ``cpl_cycles`` equals the busy cycles observed (from ``busy``'s edges: rising at the
  taking edge, falling when ``cpl_valid`` rises) modulo ``2**cnt_bits`` (the kernel's
  counter wraps), the completion held until taken and the kernel idle (``cmd_ready``)
  right after; with one task, no back-pressure, no error or flush, the busy cycles equal
  :func:`~lockstep.models.host.exec_cycles` for the testbench's parameters (when
  ``mem_q < mem_lat`` the memory's queue paces each burst: :func:`model_cycles`); the
  bounds below are on the busy cycles observed (whole, not wrapped);
* two tasks at once (no back-pressure): each ``exec <= cycles <= exec + min(own
  requests, the other's requests)`` (round robin: each request waits at most one grant of
  the other kernel; a starved kernel fails this);
* the counter strobes, counted from their edges: ``rd_beat`` / ``wr_beat`` cycles equal the
  tasks' read / write requests (every task OK); a kernel's ``k_stall`` cycles are 0 alone
  without back-pressure, equal its cycles beyond ``exec_cycles`` when no response is held
  (``lat_rate`` 0: every lost cycle is a stall), and at most that otherwise;
* the DMA byte counters (written, read) equal 4 bytes per ``dma_we`` / ``dma_re`` cycle
  since the last reset; the test registers read back as written (masked to their widths).

The parameters checked are the testbench's (``LOCKSTEP_TB_PARAMS``): a negative test
builds the DUT with another ``mem_lat`` and must fail on ``exec_cycles``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, Event, FallingEdge, First, SimTimeoutError, Timer, with_timeout
from cocotb.utils import get_sim_time
from pyuvm import (
    ConfigDB,
    uvm_analysis_port,
    uvm_driver,
    uvm_subscriber,
    uvm_test,
)

from lockstep.gen.host.mem import TP_REGS, lfsr_after
from lockstep.models import host
from lockstep.models.host.params import HostParams

from ..context import CLOCK_NS, TbContext, start
from ..coverage import Covergroup
from ..seq import DriverEnv, ListSeq

__all__ = ["EngineTest", "Step", "Task", "make_steps"]

M32 = (1 << 32) - 1
#: Test-port registers (docs/host.md section 9; gen/host/mem.py).
TP = TP_REGS
OK, MEM_ERR, ABORTED = host.ST["OK"], host.ST["MEM_ERR"], host.ST["ABORTED"]


# ---------------------------------------------------------------------------------------
# stimulus


@dataclass
class Task:
    """One command on one kernel.

    Attributes:
        kernel: the kernel it is offered to.
        desc: the descriptor (an OK MATMUL for ``wgt_base``).
        wgt_base: WGT_BASE (bytes); ``cmd_wgt = (wgt_base + wgt_off) >> 2``.
        a, w: A (M x K) and W (K x N).
        flush_at: the busy cycle (1 = the first) in which ``k_abort`` rises, or None.
        flush_len: cycles ``k_abort`` stays high (None: until the completion).
        cpl_wait: cycles the completion waits before ``cpl_ready``.
        flush_in_done: pulse ``k_abort`` while the completion waits (it must stay OK).
        reset_at: the busy cycle with a one-cycle ``rst`` (the task is abandoned), or None.
    """

    kernel: int
    desc: host.Descriptor
    wgt_base: int
    a: np.ndarray
    w: np.ndarray
    flush_at: int | None = None
    flush_len: int | None = None
    cpl_wait: int = 0
    flush_in_done: bool = False
    reset_at: int | None = None

    def cmd(self) -> dict[str, int]:
        d = self.desc
        return {"cmd_m": d.m, "cmd_n": d.n, "cmd_k": d.k, "cmd_act": d.act_addr >> 2,
                "cmd_wgt": (self.wgt_base + d.wgt_off) >> 2, "cmd_out": d.out_addr >> 2, "cmd_es16": d.dtype,
                "cmd_relu": d.relu, "cmd_pool": d.pool, "cmd_mult": d.mult, "cmd_shift": d.shift}

    def ranges(self) -> dict[str, tuple[int, int]]:
        """Byte ranges read (``act``, ``wgt``) and written (``out``)."""
        return host.task_ranges(self.desc, self.wgt_base)

    def requests(self) -> int:
        """Memory requests of the whole task."""
        ww, wa, wo = host.task_words(self.desc)
        return ww + self.desc.m * wa + host.out_rows(self.desc) * wo

    def __repr__(self) -> str:
        d = self.desc
        f = f" flush@{self.flush_at}/{self.flush_len}" if self.flush_at is not None else ""
        return (f"k{self.kernel} {'int16' if d.dtype else 'int8'} M{d.m} K{d.k} N{d.n} relu{d.relu} pool{d.pool} "
                f"mult{d.mult} shift{d.shift}{f}")


@dataclass
class Step:
    """One step (module docstring)."""

    tag: str
    tasks: list[Task]
    loads: list[tuple[int, int]] = field(default_factory=list)  # (word, value) DMA writes
    tp: dict[str, int] = field(default_factory=dict)  # seed, bp_rate, lat_rate, err_lo, err_hi
    reset: bool = False
    gap: int = 0  # cycles between the two commands of a pair
    chain: bool = False  # the tasks one after the other on one kernel, back to back

    @property
    def abandoned(self) -> bool:
        """A reset in the middle of a task: no completion, everything cleared."""
        return any(t.reset_at is not None for t in self.tasks)

    @property
    def concurrent(self) -> bool:
        """Two tasks at once on the two kernels."""
        return len(self.tasks) == 2 and not self.chain

    @property
    def backpressure(self) -> bool:
        return bool(self.tp.get("bp_rate", 0) or self.tp.get("lat_rate", 0))

    def window(self) -> tuple[int, int]:
        return self.tp.get("err_lo", 0), self.tp.get("err_hi", 0)

    def __repr__(self) -> str:
        tp = f" bp{self.tp.get('bp_rate', 0)}/lat{self.tp.get('lat_rate', 0)}" if self.backpressure else ""
        lo, hi = self.window()
        win = f" err[{lo},{hi})" if hi > lo else ""
        ch = " chained" if self.chain else ""
        return f"{self.tag}{' rst' if self.reset else ''}{tp}{win}{ch}: " + "; ".join(map(repr, self.tasks))


def expected_status(step: Step, t: Task) -> int:
    """ABORTED when the step has a flush (raised while every task of the step is busy; in a
    chain, the one cycle of the task it is given); MEM_ERR when the error window meets a
    word the task accesses; else OK."""
    if t.flush_at is not None if step.chain else any(x.flush_at is not None for x in step.tasks):
        return ABORTED
    lo, hi = step.window()
    for a0, a1 in t.ranges().values():
        if a1 > a0 and max(lo, a0 // 4) < min(hi, (a1 + 3) // 4):
            return MEM_ERR
    return OK


def _words_of(mat: np.ndarray, dtype: int) -> list[int]:
    buf = np.zeros(mat.size * host.esize(dtype), dtype=np.uint8)
    host.write_mat(buf, 0, mat, dtype)
    return [int(x) for x in buf.view("<u4")]


class Gen:
    """Random tasks and placements for the testbench's parameters."""

    def __init__(self, p: HostParams, rng: np.random.Generator) -> None:
        self.p = p
        self.rng = rng

    def ri(self, lo: int, hi: int) -> int:
        """A random int in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def matrix(self, rows: int, cols: int, dtype: int, mode: str | None = None) -> np.ndarray:
        """Random elements; ``mode`` (random when None): ``uniform``, ``extreme`` (only
        min, max, -1, 0, 1), ``mixed`` (a third extremes) or ``small`` (-3..3: with the
        ``unit`` scale every sum stays in range, odd and even, either sign)."""
        lo, hi = host.sat_range(dtype)
        mode = mode or str(self.rng.choice(["uniform", "extreme", "mixed"]))
        if mode == "small":
            return self.rng.integers(-3, 4, size=(rows, cols), dtype=np.int64)
        x = self.rng.integers(lo, hi + 1, size=(rows, cols), dtype=np.int64)
        ext = np.array([lo, hi, -1, 0, 1], dtype=np.int64)
        pick = ext[self.rng.integers(0, len(ext), size=(rows, cols))]
        if mode == "extreme":
            return pick
        if mode == "mixed":
            return np.where(self.rng.random((rows, cols)) < 1 / 3, pick, x)
        return x

    def dims(self, dtype: int, kind: str, pool: int) -> tuple[int, int, int]:
        """(M, K, N): ``kind`` ``min``, ``max`` or ``random``; K and N whole words."""
        p, epw = self.p, 4 // host.esize(dtype)
        kmax, nmax = p.k_max // epw * epw, p.n_max // epw * epw
        mmax = p.m_max - (p.m_max % 2 if pool else 0)
        if kind == "min":
            return (2 if pool else 1), epw, epw
        if kind == "max":
            return mmax, kmax, nmax
        m = self.ri(1, mmax)
        if pool:
            m = max(2, m - m % 2)
        return m, epw * self.ri(1, kmax // epw), epw * self.ri(1, nmax // epw)

    def scale(self, a: np.ndarray, w: np.ndarray, dtype: int, kind: str | None = None) -> tuple[int, int]:
        """(mult, shift): ``unit`` (1, 0), ``zero`` (mult 0), ``max`` (65535, 31), ``sat``
        (65535, 0: saturates), else a mult with a shift putting the largest sum near the
        element range (some saturate, most not)."""
        kind = kind or str(self.rng.choice(["fit", "fit", "fit", "unit", "sat", "zero", "max"]))
        if kind == "unit":
            return 1, 0
        if kind == "zero":
            return 0, self.ri(0, 31)
        if kind == "max":
            return 65535, 31
        if kind == "sat":
            return 65535, 0
        mult = self.ri(1, 65535)
        big = int(np.abs(a @ w).max()) * mult
        shift = big.bit_length() - (8 * host.esize(dtype) - 1) + self.ri(-2, 2)
        return mult, min(31, max(0, shift))

    def place(self, sizes: list[int], taken: list[tuple[int, int]]) -> list[int]:
        """Word-aligned byte addresses for regions of ``sizes`` bytes, disjoint from each
        other and from ``taken`` (half-open byte ranges), anywhere in the memory."""
        top = self.p.mem_bytes
        for _ in range(1000):
            out, used = [], list(taken)
            for sz in sizes:
                a = 4 * self.ri(0, (top - sz) // 4)
                if any(a < b1 and b0 < a + sz for b0, b1 in used):
                    break
                out.append(a)
                used.append((a, a + sz))
            else:
                return out
        raise RuntimeError(f"cannot place regions {sizes} in {top} bytes")

    def task(self, kernel: int = 0, dtype: int | None = None, relu: int | None = None, pool: int | None = None,
             kind: str = "random", scale: str | None = None, data: str | None = None,
             taken: list[tuple[int, int]] | None = None, shared: Task | None = None) -> Task:
        """A random OK MATMUL (``shared``: use that task's weight region and W when the
        shapes allow, K and N equal)."""
        g = self.ri
        dtype = g(0, 1) if dtype is None else dtype
        relu = g(0, 1) if relu is None else relu
        pool = g(0, 1) if pool is None else pool
        if pool and self.p.m_max < 2:
            pool = 0
        m, k, n = self.dims(dtype, kind, pool)
        es = host.esize(dtype)
        if shared is not None and shared.desc.dtype == dtype:
            k, n = shared.desc.k, shared.desc.n
        a = self.matrix(m, k, dtype, data)
        taken = list(taken or [])
        if shared is not None and shared.desc.dtype == dtype:
            w, wgt_base, wgt_off = shared.w, shared.wgt_base, shared.desc.wgt_off
            wsize = wgt_off + k * n * es
            wb = shared.ranges()["wgt"]
            taken.append((wgt_base, max(wgt_base + wsize, wb[1])))
        else:
            w = self.matrix(k, n, dtype, data)
            extra = 4 * g(0, 4)
            wgt_off = 4 * g(0, extra // 4)
            wsize = k * n * es + extra
            (wgt_base,) = self.place([wsize], taken)
            taken.append((wgt_base, wgt_base + wsize))
        mp = m // 2 if pool else m
        act, out = self.place([m * k * es, mp * n * es], taken)
        mult, shift = self.scale(a, w, dtype, scale)
        d = host.Descriptor(opcode=host.MATMUL, relu=relu, pool=pool, dtype=dtype, m=m, n=n, k=k, shift=shift,
                            act_addr=act, wgt_off=wgt_off, out_addr=out, mult=mult)
        lim = host.Limits(exp_seq=0, wgt_base=wgt_base, wgt_size=wsize, mem_limit=self.p.mem_bytes)
        st = host.check(d.words(), lim, self.p)
        assert st == OK, f"generated an illegal task ({host.HostParams.STATUS[st]}): {d}"
        return Task(kernel, d, wgt_base, a, w, cpl_wait=g(0, 3))

    def taken_by(self, t: Task) -> list[tuple[int, int]]:
        return [r for r in t.ranges().values() if r[1] > r[0]]


def loads_of(tasks: list[Task], rng: np.random.Generator) -> list[tuple[int, int]]:
    """The DMA writes before the tasks: W, A, and random poison on each output range."""
    out: dict[int, int] = {}
    for t in tasks:
        d = t.desc
        r = t.ranges()
        for base, mat in ((r["wgt"][0], t.w), (r["act"][0], t.a)):
            for i, v in enumerate(_words_of(mat, d.dtype)):
                out[base // 4 + i] = v
    for t in tasks:
        o0, o1 = t.ranges()["out"]
        for wd in range(o0 // 4, o1 // 4):
            out[wd] = int(rng.integers(0, 1 << 32))
    return list(out.items())


def _tp(seed: int = 0, bp: int = 0, lat: int = 0, lo: int = 0, hi: int = 0) -> dict[str, int]:
    return {"seed": seed, "bp_rate": bp, "lat_rate": lat, "err_lo": lo, "err_hi": hi}


def make_steps(scenario: str, p: HostParams, rng: np.random.Generator, count: int) -> list[Step]:
    """The steps of a scenario: ``tasks`` (directed corners then random tasks and chains of
    two back to back, no back-pressure), ``bp`` (the same with random back-pressure and
    latency, and one step in eight an error step as in ``errors``), ``errors`` (MEM_ERR
    windows, flushes, half of them one cycle long in a burst and followed at once by a task
    on the same kernel, ``rst`` in a task, each followed by a
    clean task, sometimes after a reset), ``two`` (each kernel alone, then its scaler
    corners, then both kernels at once, chains, a MEM_ERR on one kernel, both flushed)."""
    g = Gen(p, rng)
    steps: list[Step] = []

    def add(tag: str, tasks: list[Task], tp: dict[str, int] | None = None, **kw: Any) -> None:
        steps.append(Step(tag, tasks, loads_of(tasks, rng), tp or _tp(), **kw))

    def rand_bp() -> dict[str, int]:
        return _tp(seed=int(rng.integers(0, 1 << 32)), bp=g.ri(0, 12), lat=g.ri(0, 12) if rng.random() < 0.6 else 0)

    def chain(k: int) -> list[Task]:
        """Two tasks on kernel ``k``, the second taken in the first idle cycle."""
        t0 = g.task(kernel=k)
        t0.cpl_wait = 0
        return [t0, g.task(kernel=k, taken=g.taken_by(t0))]

    def error_step(which: int) -> None:
        """0: a MEM_ERR window over a word of W, A or the output; 1: a flush in a busy
        cycle, a pulse or held until the completion; 2: ``rst`` in a busy cycle; 3: a
        one-cycle flush with requests outstanding, the next task right after."""
        t = g.task()
        if which == 0:
            kind = str(rng.choice(["wgt", "act", "out"]))
            a0, a1 = t.ranges()[kind]
            wd = g.ri(a0 // 4, (a1 - 1) // 4)
            lo, hi = wd - g.ri(0, 2), wd + 1 + g.ri(0, 2)
            add(f"mem_err_{kind}", [t], _tp(lo=max(0, lo), hi=hi, bp=g.ri(0, 1) * g.ri(0, 8)))
        elif which == 1:
            e = host.exec_cycles(t.desc, p)
            t.flush_at = int(rng.choice([1, 2, g.ri(1, e), e]))
            t.flush_len = None if rng.random() < 0.5 else g.ri(1, 3)
            add("flush", [t])
        elif which == 3:  # a one-cycle flush while the weight burst issues, then the next
            # task in the first idle cycle: every request the flushed task issued is answered
            # before its completion, or its late responses land in the next task
            # (host_engine@13cc m012, m048: a completion with requests outstanding survived)
            # responses held (lat_rate / 16 of the cycles; 16 would hold them all) keep them
            # in flight past the next task's start
            t.flush_at, t.flush_len, t.cpl_wait = g.ri(2, 1 + host.task_words(t.desc)[0]), 1, 0
            add("flush_chain", [t, g.task(kernel=t.kernel, taken=g.taken_by(t))],
                _tp(seed=int(rng.integers(0, 1 << 32)), lat=g.ri(8, 12)), chain=True)
        else:  # abandoned, everything cleared; half the time while the weight burst issues
            ww = host.task_words(t.desc)[0]
            t.reset_at = g.ri(2, 1 + ww) if rng.random() < 0.5 else g.ri(1, host.exec_cycles(t.desc, p))
            add("rst_in_task", [t])

    if scenario in ("tasks", "bp"):
        # directed: every dtype x relu x pool, shapes at their minima and maxima, scaler corners
        combos = [(dt, re, po) for dt in (0, 1) for re in (0, 1) for po in (0, 1)]
        for i, (dt, re, po) in enumerate(combos):
            kind = ("min", "max")[i % 2]
            add(f"corner{i}", [g.task(dtype=dt, relu=re, pool=po, kind=kind,
                                      scale=("sat", "unit", "max", "zero")[i % 4], data=("extreme", "mixed")[i % 2])],
                rand_bp() if scenario == "bp" else None)
        add("sat_extreme", [g.task(dtype=1, relu=0, pool=0, kind="max", scale="sat", data="extreme")],
            rand_bp() if scenario == "bp" else None)
        # shift 0 with results in range on every lane, both rows of a pooled pair too
        # (negative ones: the sign extension's mask at shift 0 sets no bit; random tasks
        # at shift 0 saturate)
        for dt in (0, 1):
            for po in (0, 1):
                add(f"unit_small{dt}{po}", [g.task(dtype=dt, relu=0, pool=po, kind="max", scale="unit", data="small")],
                    rand_bp() if scenario == "bp" else None)
        t = g.task(kind="max")
        t.cpl_wait, t.flush_in_done = 2, True
        add("flush_in_done", [t])
        while len(steps) < count:
            tp = None
            if scenario == "bp":
                tp = rand_bp() if rng.random() < 0.85 else None
                # one step in eight an error, so a configuration run only with ``bp`` (the
                # quick tier's mem_q < mem_lat engine) meets them too: a flush or MEM_ERR with
                # requests outstanding drains them (host_engine@13cc: four mutants of the
                # drain survived)
                if len(steps) % 8 == 7:
                    error_step(len(steps) // 8 % 4)
                    continue
            if len(steps) % 6 == 5:
                add("chain", chain(0), tp, chain=True)
            else:
                add("random", [g.task()], tp)
    elif scenario == "errors":
        while len(steps) < count:
            r = len(steps) % 6
            if r % 2 == 0:
                error_step(3 if r == 2 and rng.random() < 0.5 else r // 2)
            else:  # a clean task after each error (sometimes after a reset)
                add("after", [g.task()], reset=bool(r == 3 and rng.random() < 0.5))
    elif scenario == "two":
        if p.n_kernels != 2:
            raise ValueError("scenario 'two' needs n_kernels = 2")
        add("alone_k0", [g.task(kernel=0, kind="max")])
        add("alone_k1", [g.task(kernel=1, kind="max")])
        # each kernel's scaler corners over every lane (as in ``tasks``): saturation both
        # ways, in-range results at shift 0 and of the largest sums, pooled
        for kk in (0, 1):
            for dt in (0, 1):
                add(f"fit_k{kk}_{dt}", [g.task(kernel=kk, dtype=dt, relu=0, pool=1, kind="max", scale="fit",
                                               data="extreme")])
                add(f"sat_k{kk}_{dt}", [g.task(kernel=kk, dtype=dt, relu=0, pool=1, kind="max", scale="sat",
                                               data="extreme")])
                add(f"unit_small_k{kk}_{dt}", [g.task(kernel=kk, dtype=dt, relu=0, pool=1, kind="max", scale="unit",
                                                      data="small")])
        while len(steps) < count:
            r = len(steps) % 5
            t0 = g.task(kernel=0, kind="max" if r == 0 else "random")
            shared = t0 if rng.random() < 0.5 else None
            t1 = g.task(kernel=1, taken=g.taken_by(t0), shared=shared, kind="max" if r == 0 else "random")
            first, second = (t0, t1) if rng.random() < 0.5 else (t1, t0)
            gap = g.ri(0, 3)
            if r == 3:  # both flushed while both are busy
                e = min(host.exec_cycles(t.desc, p) for t in (t0, t1))
                for t in (t0, t1):
                    t.flush_at, t.flush_len = None, None
                first.flush_at, first.flush_len = g.ri(gap + 2, max(gap + 2, e)), None
                add("pair_flush", [first, second], gap=gap)
            elif r == 4:  # a MEM_ERR on one kernel only
                rr = first.ranges()["out"]
                wd = g.ri(rr[0] // 4, (rr[1] - 1) // 4)
                add("pair_mem_err", [first, second], _tp(lo=wd, hi=wd + 1), gap=gap)
            elif r == 1 and len(steps) % 2:
                add("chain", chain(g.ri(0, 1)), chain=True)
            else:
                add("pair", [first, second], rand_bp() if r == 2 else None, gap=gap)
    else:
        raise ValueError(f"unknown scenario {scenario!r} (tasks, bp, errors, two)")
    return steps


# ---------------------------------------------------------------------------------------
# the pins


@dataclass
class TaskObs:
    """What one task did: times are the rising edges (ns) of the taking, busy's and
    cpl_valid's changes."""

    take: int = -1
    status: int = -1
    cycles: int = -1
    busy: list[tuple[int, int]] = field(default_factory=list)
    cpl: list[tuple[int, int]] = field(default_factory=list)
    cpl_take: int = -1
    out: list[int] = field(default_factory=list)

    @property
    def busy_cycles(self) -> int:
        """The busy cycles observed on the pins (whole: ``cycles`` is them modulo
        ``2**cnt_bits``), -1 without a completion or one rise and one fall of busy."""
        if self.cycles < 0 or len(self.busy) != 2 or self.busy[0][1] != 1 or self.busy[1][1] != 0:
            return -1
        return (self.busy[1][0] - self.busy[0][0]) // CLOCK_NS


@dataclass
class StepObs:
    tasks: list[TaskObs] = field(default_factory=list)
    tp_read: dict[str, int] = field(default_factory=dict)
    after_reset: dict[str, int] = field(default_factory=dict)
    reset_nonzero: int = 0
    mem: np.ndarray | None = None
    dma: tuple[int, int] = (0, 0)
    rd_beats: int = 0
    wr_beats: int = 0
    beat_spans: list[tuple[int, int]] = field(default_factory=list)  # (rise, fall) of rd/wr_beat, ns
    stalls: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class EngineBfm:
    """All pin-level access to ``host_engine``. Inputs change just after a falling edge and
    are taken by the next rising edge; registered outputs are read at a falling edge,
    combinational ones 1 ns after the inputs change."""

    INPUTS = ("cmd_m", "cmd_n", "cmd_k", "cmd_act", "cmd_wgt", "cmd_out", "cmd_es16", "cmd_relu", "cmd_pool",
              "cmd_mult", "cmd_shift", "cmd_valid", "k_abort", "cpl_ready", "dma_we", "dma_addr", "dma_wdata", "dma_re",
              "dma_raddr", "tp_we", "tp_addr", "tp_wdata", "tp_raddr")

    def __init__(self, dut: Any, record: dict[str, Any]) -> None:
        self.dut = dut
        self.widths = {n: int(r["width"]) for n, r in record["ports"].items()}
        self.nk = int(record["params"]["n_kernels"])
        self.cb = self.widths["cpl_cycles"] // self.nk  # each kernel's cnt_bits-wide cycles
        self.mem_words = (1 << int(record["params"]["mem_aw"])) // 4
        for n in self.INPUTS:
            getattr(dut, n).value = 0
        self.cpl_ready = 0
        self.busy_log: list[list[tuple[int, int]]] = [[] for _ in range(self.nk)]
        self.cpl_log: list[list[tuple[int, int]]] = [[] for _ in range(self.nk)]
        self.cpl_ev = [Event() for _ in range(self.nk)]
        self.high = [0] * (2 + self.nk)  # cycles with rd_beat, wr_beat, k_stall[i] high
        self.spans: list[tuple[int, int]] = []  # rd_beat / wr_beat high from, to (ns)
        # the memory's LFSR: (its state, the cycle it had it): set by rst and a seed write,
        # one step a cycle from there (lfsr_after); each read of it is checked
        self.lfsr_at = (1, 0)
        self.lfsr_problems: list[str] = []

    def drive(self, **vals: int) -> None:
        for n, v in vals.items():
            getattr(self.dut, n).value = int(v) & ((1 << self.widths[n]) - 1)

    async def fall(self, n: int = 1) -> None:
        if n == 1:
            await FallingEdge(self.dut.clk)
        elif n > 1:
            await ClockCycles(self.dut.clk, n, rising=False)

    async def monitor(self) -> None:
        """Log every change of ``k_busy`` and ``cpl_valid`` (rising-edge times, per kernel);
        set the kernel's event when its ``cpl_valid`` rises."""
        d = self.dut
        pb, pc = int(d.k_busy.value), int(d.cpl_valid.value)
        while True:
            await First(d.k_busy.value_change, d.cpl_valid.value_change)
            t = int(get_sim_time("ns"))
            b, c = int(d.k_busy.value), int(d.cpl_valid.value)
            for i in range(self.nk):
                if (b ^ pb) >> i & 1:
                    self.busy_log[i].append((t, b >> i & 1))
                if (c ^ pc) >> i & 1:
                    self.cpl_log[i].append((t, c >> i & 1))
                    if c >> i & 1:
                        self.cpl_ev[i].set()
            pb, pc = b, c

    async def beats(self) -> None:
        """Count the cycles ``rd_beat``, ``wr_beat`` and each ``k_stall`` bit are high, from
        their edges (:attr:`high`; the bits are 0 between steps)."""
        d = self.dut
        sigs = [d.rd_beat, d.wr_beat, d.k_stall]
        n = 2 + self.nk
        prev, since = 0, [0] * n

        def bits() -> int:
            v = int(d.k_stall.value) << 2 | int(d.wr_beat.value) << 1 | int(d.rd_beat.value)
            return v

        prev = bits()
        while True:
            await First(*(x.value_change for x in sigs))
            t = int(get_sim_time("ns"))
            v = bits()
            for i in range(n):
                if (v ^ prev) >> i & 1:
                    if v >> i & 1:
                        since[i] = t
                    else:
                        self.high[i] += (t - since[i]) // CLOCK_NS
                        if i < 2:
                            self.spans.append((since[i], t))
            prev = v

    @staticmethod
    def cycle() -> int:
        return int(get_sim_time("ns")) // CLOCK_NS

    async def reset(self) -> None:
        self.dut.rst.value = 1
        await self.fall(2)
        self.lfsr_at = (1, self.cycle())
        self.dut.rst.value = 0
        await self.fall()

    async def tp_write(self, regs: dict[str, int]) -> None:
        for name, v in regs.items():
            self.drive(tp_we=1, tp_addr=TP[name], tp_wdata=v)
            await self.fall()
            if name == "seed":
                self.lfsr_at = (v & M32, self.cycle())
        self.drive(tp_we=0)

    async def tp_read(self, names: list[str]) -> dict[str, int]:
        out = {}
        for n in names:
            self.drive(tp_raddr=TP[n])
            await Timer(1, "ns")
            out[n] = int(self.dut.tp_rdata.value)
            state, since = self.lfsr_at[0], self.cycle() - self.lfsr_at[1]
            if n == "lfsr" and out[n] != (want := lfsr_after(state, since)):
                self.lfsr_problems.append(f"test port lfsr = {out[n]:#010x} {since} cycles after state {state:#x}, "
                                          f"expected {want:#010x}")
        await self.fall()
        return out

    async def dma_write(self, loads: list[tuple[int, int]]) -> None:
        for wd, v in loads:
            self.drive(dma_we=1, dma_addr=wd, dma_wdata=v)
            await self.fall()
        self.drive(dma_we=0)

    async def dma_read(self, lo: int, n: int) -> list[int]:
        """``n`` words from ``lo``, one per cycle with ``dma_re`` (counted)."""
        out = []
        for i in range(n):
            self.drive(dma_re=1, dma_raddr=lo + i)
            await Timer(1, "ns")
            out.append(int(self.dut.dma_rdata.value))
            await self.fall()
        self.drive(dma_re=0)
        return out

    async def scan(self) -> np.ndarray:
        """The whole memory without ``dma_re`` (nothing else may change meanwhile)."""
        out = np.zeros(self.mem_words, dtype=np.uint32)
        for i in range(self.mem_words):
            self.drive(dma_raddr=i)
            await Timer(1, "ns")
            out[i] = int(self.dut.dma_rdata.value)
        await self.fall()
        return out

    async def run(self, step: Step, budget: int) -> StepObs:
        """Drive one step (module docstring) and observe it."""
        d, obs = self.dut, StepObs()
        if step.reset:
            await self.reset()
            obs.after_reset = await self.tp_read(list(TP))
            mem = await self.scan()
            obs.reset_nonzero = int(np.count_nonzero(mem))
        await self.tp_write(step.tp)
        obs.tp_read = await self.tp_read(list(step.tp))
        await self.dma_write(step.loads)
        for i in range(self.nk):
            self.busy_log[i].clear()
            self.cpl_log[i].clear()
            self.cpl_ev[i].clear()
        obs.tasks = [TaskObs() for _ in step.tasks]
        self.high = [0] * (2 + self.nk)
        self.spans = []
        done = []
        for j, t in enumerate(step.tasks):
            if j and step.chain:  # the next command in the first idle cycle (E + 2 after the take)
                await done[-1]
            elif j:
                await self.fall(step.gap)
            if not int(d.cmd_ready.value) >> t.kernel & 1:
                obs.problems.append(f"task {j}: kernel {t.kernel} not idle (cmd_ready low) before its command")
            self.cpl_ev[t.kernel].clear()
            self.drive(cmd_valid=1 << t.kernel, **t.cmd())
            obs.tasks[j].take = int(get_sim_time("ns")) + CLOCK_NS // 2
            await self.fall()
            self.drive(cmd_valid=0)
            if t.flush_at is not None:
                done.insert(0, cocotb.start_soon(self._flush(t, budget)))
            if t.reset_at is not None:
                done.append(cocotb.start_soon(self._reset_in(t, obs)))
            else:
                done.append(cocotb.start_soon(self._complete(t, obs.tasks[j], obs, budget)))
        for c in done:
            await c
        obs.rd_beats, obs.wr_beats, obs.stalls = self.high[0], self.high[1], self.high[2:]
        obs.beat_spans = list(self.spans)
        for k in range(self.nk):  # each task's edges: from its take to the next take on its kernel
            mine = sorted((obs.tasks[j].take, j) for j, t in enumerate(step.tasks) if t.kernel == k)
            for i, (t0, j) in enumerate(mine):
                t1 = mine[i + 1][0] if i + 1 < len(mine) else None
                obs.tasks[j].busy = [e for e in self.busy_log[k] if e[0] >= t0 and (t1 is None or e[0] < t1)]
                obs.tasks[j].cpl = [e for e in self.cpl_log[k] if e[0] >= t0 and (t1 is None or e[0] < t1)]
        if not step.abandoned:
            for j, t in enumerate(step.tasks):
                o0, o1 = t.ranges()["out"]
                obs.tasks[j].out = await self.dma_read(o0 // 4, (o1 - o0) // 4)
        obs.mem = await self.scan()
        r = await self.tp_read(["dma_wr_bytes", "dma_rd_bytes", "lfsr"])
        obs.dma = (r["dma_wr_bytes"], r["dma_rd_bytes"])
        obs.problems += self.lfsr_problems
        self.lfsr_problems = []
        return obs

    async def _reset_in(self, t: Task, obs: StepObs) -> None:
        """``rst`` high in busy cycle ``reset_at`` (this coroutine starts in cycle 1); then
        every kernel idle without a completion, the test registers 0, the memory 0."""
        d = self.dut
        await self.fall(t.reset_at - 1)
        d.rst.value = 1
        await self.fall()
        self.lfsr_at = (1, self.cycle())
        d.rst.value = 0
        await self.fall()
        allk = (1 << self.nk) - 1
        got = (int(d.k_busy.value), int(d.cpl_valid.value), int(d.cmd_ready.value))
        if got != (0, 0, allk):
            obs.problems.append(f"after rst in a task: k_busy, cpl_valid, cmd_ready = {got}, want (0, 0, {allk})")
        obs.after_reset = await self.tp_read(list(TP))
        obs.reset_nonzero = int(np.count_nonzero(await self.scan()))

    async def _flush(self, t: Task, budget: int) -> None:
        """``k_abort`` high from busy cycle ``flush_at`` (this coroutine starts in cycle 1)."""
        await self.fall(t.flush_at - 1)
        self.drive(k_abort=1)
        if t.flush_len is None:
            try:
                await with_timeout(self.cpl_ev[t.kernel].wait(), budget * CLOCK_NS, "ns")
            except SimTimeoutError:
                pass  # _complete reports the missing completion
            await self.fall()
        else:
            await self.fall(t.flush_len)
        self.drive(k_abort=0)

    async def _complete(self, t: Task, o: TaskObs, obs: StepObs, budget: int) -> None:
        """Wait for the kernel's completion, hold it ``cpl_wait`` cycles, take it."""
        d, k = self.dut, t.kernel
        try:
            await with_timeout(self.cpl_ev[k].wait(), budget * CLOCK_NS, "ns")
        except SimTimeoutError:
            obs.problems.append(f"kernel {k}: no completion within {budget} cycles")
            return
        await self.fall()
        o.status = int(d.cpl_status.value) >> 4 * k & 0xF
        o.cycles = int(d.cpl_cycles.value) >> self.cb * k & ((1 << self.cb) - 1)
        for i in range(t.cpl_wait):
            if t.flush_in_done and i == 0:
                self.drive(k_abort=1)
            await self.fall()
            if t.flush_in_done and i == 0:
                self.drive(k_abort=0)
            st = int(d.cpl_status.value) >> 4 * k & 0xF
            if not int(d.cpl_valid.value) >> k & 1 or st != o.status:
                obs.problems.append(f"kernel {k}: completion not held ({i + 1} cycles after it was offered: "
                                    f"cpl_valid {int(d.cpl_valid.value) >> k & 1}, status {st} vs {o.status})")
        self.cpl_ready |= 1 << k
        self.drive(cpl_ready=self.cpl_ready)
        o.cpl_take = int(get_sim_time("ns")) + CLOCK_NS // 2
        await self.fall()
        self.cpl_ready &= ~(1 << k)
        self.drive(cpl_ready=self.cpl_ready)
        if int(d.cpl_valid.value) >> k & 1 or not int(d.cmd_ready.value) >> k & 1:
            obs.problems.append(f"kernel {k}: after the completion was taken cpl_valid = "
                                f"{int(d.cpl_valid.value) >> k & 1}, cmd_ready = {int(d.cmd_ready.value) >> k & 1} "
                                "(want 0, 1)")


def step_budget(step: Step, p: HostParams) -> int:
    """Cycles a step's completions may take (back-pressure up to 12/16 and the other kernel
    slow a task down; a hang fails here)."""
    e = sum(host.exec_cycles(t.desc, p) + t.requests() for t in step.tasks)
    return 20 * e + 500


# ---------------------------------------------------------------------------------------
# checking


class Golden:
    """The golden memory image and DMA byte counts, replayed step by step."""

    def __init__(self, p: HostParams) -> None:
        self.p = p
        self.mem = np.zeros(p.mem_bytes, dtype=np.uint8)
        self.dma_wr = 0
        self.dma_rd = 0

    def check(self, step: Step, obs: StepObs) -> list[str]:
        p = self.p
        errs = list(obs.problems)
        if step.reset:
            errs += self.after_reset(obs)
        aw_mask = (1 << (p.aww + 1)) - 1
        masks = {"seed": M32, "bp_rate": 0x1F, "lat_rate": 0x1F, "err_lo": aw_mask, "err_hi": aw_mask}
        want_tp = {k: v & masks[k] for k, v in step.tp.items()}
        if obs.tp_read != want_tp:
            errs.append(f"test registers read back {obs.tp_read}, want {want_tp}")
        words = self.mem.view("<u4")
        for wd, v in step.loads:
            words[wd] = v
        self.dma_wr += 4 * len(step.loads)
        if step.abandoned:  # rst in the task: everything cleared, no completion
            errs += self.after_reset(obs)
            return errs + self.compare(obs, np.zeros(p.mem_bytes // 4, dtype=bool))
        undefined = np.zeros(p.mem_bytes // 4, dtype=bool)
        dropped = np.zeros(p.mem_bytes // 4, dtype=bool)
        lo, hi = step.window()
        for j, t in enumerate(step.tasks):
            o = obs.tasks[j]
            want = expected_status(step, t)
            name = HostParams.STATUS
            if o.status != want:
                errs.append(f"task {j} ({t!r}): status {name[o.status] if 0 <= o.status < 12 else o.status}, "
                            f"want {name[want]}")
            errs += [f"task {j}: {e}" for e in self.timing(step, t, o, want, obs.beat_spans)]
            o0, o1 = t.ranges()["out"]
            self.dma_rd += o1 - o0
            if want == OK:
                host.write_mat(self.mem, t.desc.out_addr, host.kernel_ref(t.a, t.w, t.desc), t.desc.dtype)
                got = np.array(o.out, dtype=np.uint32)
                exp = words[o0 // 4:o1 // 4]
                if got.size != exp.size or np.any(got != exp):
                    bad = np.flatnonzero(got != exp) if got.size == exp.size else [0]
                    errs.append(f"task {j} ({t!r}): result differs in {len(bad)} word(s); first word "
                                f"{o0 // 4 + int(bad[0])}: got {int(got[bad[0]]) if got.size else None:#x}, want "
                                f"{int(exp[bad[0]]):#x}")
            else:
                undefined[o0 // 4:o1 // 4] = True
                if want == MEM_ERR:  # writes inside the error window are dropped: the poison stays
                    dropped[max(lo, o0 // 4):max(lo, min(hi, o1 // 4))] = True
        errs += self.strobes(step, obs)
        return errs + self.compare(obs, undefined & ~dropped)

    def strobes(self, step: Step, obs: StepObs) -> list[str]:
        """The counter strobes over the step: ``rd_beat`` / ``wr_beat`` cycles = the read /
        write requests of the tasks (every task OK); each kernel's ``k_stall`` cycles = its
        task's cycles beyond its alone, unstalled schedule when no response is held
        (``lat_rate`` 0), at most that otherwise (``mem_q >= mem_lat``), 0 without
        back-pressure and another kernel."""
        p, errs = self.p, []
        status = [expected_status(step, t) for t in step.tasks]
        if all(s == OK for s in status):
            rd = sum(host.task_words(t.desc)[0] + t.desc.m * host.task_words(t.desc)[1] for t in step.tasks)
            wr = sum(host.out_rows(t.desc) * host.task_words(t.desc)[2] for t in step.tasks)
            if (obs.rd_beats, obs.wr_beats) != (rd, wr):
                errs.append(f"rd_beat, wr_beat cycles = {obs.rd_beats}, {obs.wr_beats}; want the requests {rd}, {wr}")
        if p.mem_q < p.mem_lat:
            return errs
        for j, t in enumerate(step.tasks):
            o, st = obs.tasks[j], obs.stalls[t.kernel] if t.kernel < len(obs.stalls) else None
            if status[j] != OK or o.busy_cycles < 0 or st is None:
                continue
            if sum(x.kernel == t.kernel for x in step.tasks) > 1:
                continue  # a chain: the kernel's stalls are both tasks'
            slack = o.busy_cycles - host.exec_cycles(t.desc, p)  # whole cycles (cpl_cycles wraps)
            if not step.backpressure and not step.concurrent and st:
                errs.append(f"task {j}: k_stall high {st} cycles alone without back-pressure (want 0)")
            elif step.tp.get("lat_rate", 0) == 0 and st != slack:
                errs.append(f"task {j}: k_stall high {st} cycles, want cycles - exec_cycles = {slack} (no held "
                            "response: every lost cycle is a stall)")
            elif st > slack:
                errs.append(f"task {j}: k_stall high {st} cycles, more than cycles - exec_cycles = {slack}")
        return errs

    def after_reset(self, obs: StepObs) -> list[str]:
        """``rst``: the golden image and DMA counts cleared; the DUT's registers and memory 0."""
        self.mem[:] = 0
        self.dma_wr = self.dma_rd = 0
        errs = []
        # (the LFSR restarts from 1 and steps on: checked where it is read)
        bad = {k: v for k, v in obs.after_reset.items() if v and k != "lfsr"}
        if bad or len(obs.after_reset) != len(TP):
            errs.append(f"test registers after rst {obs.after_reset} (want all {len(TP)} 0 but the LFSR)")
        if obs.reset_nonzero:
            errs.append(f"{obs.reset_nonzero} memory word(s) nonzero after rst")
        return errs

    def compare(self, obs: StepObs, undefined: np.ndarray) -> list[str]:
        """The whole memory against the golden image (``undefined`` words: the DUT's are
        adopted), and the DMA byte counters."""
        errs = []
        words = self.mem.view("<u4")
        if obs.mem is not None:
            words[undefined] = obs.mem[undefined]
            bad = np.flatnonzero(obs.mem != words)
            if bad.size:
                i = int(bad[0])
                errs.append(f"memory: {bad.size} word(s) differ from the golden image (no write outside an output "
                            f"range); first word {i}: got {int(obs.mem[i]):#x}, want {int(words[i]):#x}")
        want_dma = (self.dma_wr & M32, self.dma_rd & M32)
        if obs.dma != want_dma:
            errs.append(f"DMA byte counters (written, read) = {obs.dma}, want {want_dma}")
        return errs

    def timing(self, step: Step, t: Task, o: TaskObs, want: int, spans: list[tuple[int, int]]) -> list[str]:
        """busy's edges, cpl_cycles (the busy cycles modulo ``2**cnt_bits``), exec_cycles
        and the two-kernel bounds (on the busy cycles observed, which do not wrap); after a
        flush, no request (``spans``: rd_beat / wr_beat high, ns) up to the completion."""
        p = self.p
        errs = []
        if len(o.busy) != 2 or o.busy[0] != (o.take, 1) or o.busy[1][1] != 0:
            errs.append(f"busy edges {o.busy}, want a rise at the taking edge {o.take} then one fall")
            return errs
        rise, fall = o.busy[0][0], o.busy[1][0]
        busy = (fall - rise) // CLOCK_NS
        if len(o.cpl) != 2 or o.cpl[0] != (fall, 1) or o.cpl[1] != (o.cpl_take, 0):
            errs.append(f"cpl_valid edges {o.cpl}, want a rise when busy falls ({fall}) and a fall at the edge that "
                        f"takes it ({o.cpl_take})")
        if o.cycles != busy & p.cnt_mask:
            errs.append(f"cpl_cycles = {o.cycles}, busy cycles observed = {busy} (modulo 2**{p.cnt_bits}: "
                        f"{busy & p.cnt_mask})")
        e = host.exec_cycles(t.desc, p)
        exact = not step.concurrent and not step.backpressure and want == OK
        if exact and busy != model_cycles(t.desc, p):
            errs.append(f"busy cycles = {busy} (cpl_cycles {o.cycles}), want {model_cycles(t.desc, p)} (no "
                        f"back-pressure, one kernel; exec_cycles = {e}, mem_q = {p.mem_q}, mem_lat = {p.mem_lat})")
        if want == OK and busy < e:
            errs.append(f"busy cycles = {busy} (cpl_cycles {o.cycles}) below exec_cycles = {e}")
        if t.flush_at is not None and not step.concurrent:
            # the flush abandons the task: a request may issue in the abort's cycle, none
            # after it up to the completion (docs/host.md sections 7 and 9; host_engine@13cc
            # m023: the kernel went on to write its output after a flush)
            ra = o.take + t.flush_at * CLOCK_NS  # the rising edge that first sees k_abort
            for tr, tf in spans:
                first = ra + ((max(tr, ra) - ra) // CLOCK_NS + 1) * CLOCK_NS  # the first edge after both
                if first <= min(tf, fall):
                    errs.append(f"a request issued {(first - ra) // CLOCK_NS} cycle(s) after the flush (busy cycle "
                                f"{t.flush_at}), before the completion")
                    break
        if (step.concurrent and not step.backpressure and want == OK and p.mem_q >= p.mem_lat
                and all(expected_status(step, x) == OK for x in step.tasks)):
            other = next(x for x in step.tasks if x is not t)
            lim = e + min(t.requests(), other.requests())
            if busy > lim:
                errs.append(f"busy cycles = {busy} above exec_cycles + min(requests) = {lim} (round robin: "
                            "a kernel was starved)")
        return errs


def model_cycles(d: host.Descriptor, p: HostParams) -> int:
    """The busy cycles of a task alone with no back-pressure (the model's
    :func:`~lockstep.models.host.exec_cycles`, which paces each burst by the memory's
    queue when ``mem_q < mem_lat``)."""
    return host.exec_cycles(d, p)


def saturates(t: Task) -> set[str]:
    """Which ends of the element range the scaler clamps to in this task (``lo``/``hi``)."""
    d = t.desc
    acc = np.asarray(t.a, dtype=np.int64) @ np.asarray(t.w, dtype=np.int64)
    y = host.scale(acc, d.mult, d.shift, d.dtype, saturate=False)
    lo, hi = host.sat_range(d.dtype)
    return ({"lo"} if (y < lo).any() else set()) | ({"hi"} if (y > hi).any() else set())


def define_coverage(cg: Covergroup, p: HostParams) -> None:
    """Cover points over ``(step, task, obs, status)`` samples."""
    ok = lambda s: s[3] == OK  # noqa: E731
    cg.point("dtype_relu_pool",
             lambda s: f"{('int8', 'int16')[s[1].desc.dtype]}/{('-', 'relu')[s[1].desc.relu]}/"
                       f"{('-', 'pool')[s[1].desc.pool]}" if ok(s) else None,
             [f"{dt}/{re}/{po}" for dt in ("int8", "int16") for re in ("-", "relu") for po in ("-", "pool")])
    cg.point("saturation", lambda s: "hit" if ok(s) and saturates(s[1]) else None, ["hit"])
    cg.point("backpressure", lambda s: "on" if s[0].backpressure else "off", ["off", "on"])
    cg.point("status", lambda s: HostParams.STATUS[s[3]] if s[3] >= 0 else None, ["OK", "MEM_ERR", "ABORTED"])
    cg.point("control", lambda s: ("chain" if s[0].chain else "rst_in_task" if s[0].abandoned else
                                   "flush_in_done" if s[1].flush_in_done else None),
             ["chain", "rst_in_task", "flush_in_done"])
    cg.point("m_parity", lambda s: ("even", "odd")[s[1].desc.m % 2] if ok(s) else None, ["even", "odd"])
    cg.point("k_edge", lambda s: _edge(s[1].desc.k, s[1], p.k_max) if ok(s) else None, ["min", "max"])
    cg.point("n_edge", lambda s: _edge(s[1].desc.n, s[1], p.n_max) if ok(s) else None, ["min", "max"])
    if p.n_kernels == 2:
        cg.point("both_busy", lambda s: "both" if _overlap(s) else None, ["both"])


def _edge(v: int, t: Task, vmax: int) -> str | None:
    """``min`` / ``max`` when K or N is its least / largest whole-word value."""
    epw = 4 // t.desc.es
    return "min" if v == epw else "max" if v == vmax // epw * epw else None


def _overlap(s: tuple) -> bool:
    step, _, _, _, obs = s
    iv = [o.busy for o in obs.tasks]
    if len(iv) != 2 or any(len(b) != 2 for b in iv):
        return False
    (a0, a1), (b0, b1) = [(b[0][0], b[1][0]) for b in iv]
    return a0 < b1 and b0 < a1


class EngineDriver(uvm_driver):
    def build_phase(self) -> None:
        self.ap = uvm_analysis_port("ap", self)

    def connect_phase(self) -> None:
        self.bfm: EngineBfm = ConfigDB().get(self, "", "BFM")
        self.params: HostParams = ConfigDB().get(self, "", "PARAMS")

    async def run_phase(self) -> None:
        while True:
            item = await self.seq_item_port.get_next_item()
            step = item.obj
            obs = await self.bfm.run(step, step_budget(step, self.params))
            self.ap.write((step, obs))
            self.seq_item_port.item_done()


class EngineScoreboard(uvm_subscriber):
    def build_phase(self) -> None:
        self.golden = Golden(ConfigDB().get(self, "", "PARAMS"))
        self.errors: list[str] = []
        self.steps = 0
        self.bad = 0
        self.tasks = 0

    def write(self, msg: tuple[Step, StepObs]) -> None:
        step, obs = msg
        errs = self.golden.check(step, obs)
        self.steps += 1
        self.tasks += len(step.tasks)
        if errs:
            self.bad += 1
            self.errors += [f"step {self.steps - 1} ({step!r}): {e}" for e in errs]


class EngineCoverage(uvm_subscriber):
    def build_phase(self) -> None:
        self.cg = Covergroup("host.engine")
        define_coverage(self.cg, ConfigDB().get(self, "", "PARAMS"))

    def write(self, msg: tuple[Step, StepObs]) -> None:
        step, obs = msg
        for t, o in zip(step.tasks, obs.tasks):
            self.cg.sample((step, t, o, o.status, obs))


class EngineEnv(DriverEnv):
    DRIVER, SCOREBOARD, COVERAGE = EngineDriver, EngineScoreboard, EngineCoverage


class EngineTest(uvm_test):
    """The scenario's steps against the golden models (module docstring)."""

    def build_phase(self) -> None:
        ctx = TbContext.from_env()
        params = HostParams.from_dict(ctx.params)
        ConfigDB().set(None, "*", "PARAMS", params)
        self.bfm = EngineBfm(cocotb.top, ctx.record)
        ConfigDB().set(None, "*", "BFM", self.bfm)
        rng = np.random.default_rng(ctx.seed)
        self.steps = make_steps(str(ctx.opt("scenario", "tasks")), params, rng, int(ctx.opt("steps", 30)))
        ConfigDB().set(None, "*", "STEPS", self.steps)
        self.ctx, self.params = ctx, params
        self.env = EngineEnv("env", self)

    async def run_phase(self) -> None:
        self.raise_objection()
        await start(cocotb.top)
        await self.bfm.fall()
        cocotb.start_soon(self.bfm.monitor())
        cocotb.start_soon(self.bfm.beats())
        words = self.bfm.mem_words
        total = sum(step_budget(s, self.params) + len(s.loads) + 2 * words + 64 for s in self.steps) + 1000
        try:
            await with_timeout(ListSeq("seq", "STEPS", prefix="step").start(self.env.seqr), total * CLOCK_NS, "ns")
        except SimTimeoutError as exc:
            raise AssertionError(f"watchdog: {self.env.scoreboard.steps}/{len(self.steps)} steps done") from exc
        self.drop_objection()

    def check_phase(self) -> None:
        sb = self.env.scoreboard
        errors = list(sb.errors)
        if sb.steps != len(self.steps):
            errors.append(f"{sb.steps} of {len(self.steps)} steps checked")
        self.ctx.summary.update(blocks=sb.steps, tasks=sb.tasks, mismatches=sb.bad, errors=errors[:20],
                                cycles=int(get_sim_time("ns")) // CLOCK_NS)
        self.ctx.finish(errors, self.logger)

    def report_phase(self) -> None:
        self.ctx.report_coverage(self.env.coverage.cg)
