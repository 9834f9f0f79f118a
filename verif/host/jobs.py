"""Stimulus of the host family's queue testbenches (docs/host.md sections 4-9): a
scenario is a device memory layout, the weights uploaded once, and a list of steps (tasks
and CSR-level actions) generated up front from the run's seed.

Pure Python and numpy (no cocotb): ``tests/test_host_jobs.py`` checks the generator.

Memory layout (bytes, ``B = mem_bytes``): tasks' activations and results in
``[0, B/2)``, allocated one after the other, never reused within a scenario (so two
kernels never share a region); the weight region ``[B/2, 3B/4)`` (WGT_BASE, WGT_SIZE);
``[3B/4, 13B/16)`` free below MEM_LIMIT (a good task's result may end exactly at the
limit: the ``out_top`` step); ``[13B/16, B)`` lies above MEM_LIMIT and must never be
touched.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from lockstep.models import host as hm
from lockstep.models.host.params import HostParams

__all__ = ["Step", "Scenario", "make_scenario", "SCENARIOS", "MUTATIONS"]


@dataclass
class Step:
    """One thing the testbench does, in order.

    Attributes:
        kind: ``task`` (submit ``desc``; with ``batch`` > 1 this task and the next
            ``batch - 1`` task steps go behind one doorbell), ``doorbell_overflow`` (ring a tail past the
            free slots), ``owned_write`` (write into a slot the hardware owns),
            ``cq_overflow`` (advance CQ_HEAD past CQ_TAIL), ``flush`` (CTRL.soft_reset),
            ``stop_cq`` / ``resume_cq`` (the host stops / restarts consuming
            completions), ``wait`` (``gap`` cycles), ``drain`` (wait for every completion
            so far).
        desc: the task's descriptor (``seq`` is stamped at submission).
        act: the activations (M x K ints) loaded at ``desc.act_addr`` before submission.
        mutate: ``(name, fn)``: ``fn(words, exp_seq)`` corrupts the stamped words.
        gap: cycles to wait before the step.
    """

    kind: str
    desc: hm.Descriptor | None = None
    act: np.ndarray | None = None
    mutate: tuple[str, Callable[[list[int], int], list[int]]] | None = None
    gap: int = 0
    label: str = "OK"
    batch: int = 1


@dataclass
class Scenario:
    """A whole run: layout, weights, test-port settings and the steps."""

    name: str
    wgt_base: int
    wgt_size: int
    mem_limit: int
    weights: np.ndarray  # bytes at wgt_base
    steps: list[Step] = field(default_factory=list)
    bp_rate: int = 0
    lat_rate: int = 0
    err_window: tuple[int, int] | None = None  # words
    use_irq: bool = False
    halt_on_error: bool = False
    exact_cycles: bool = True  # no back-pressure, no extra latency, one kernel


def _rewrite(words: list[int], w: int, mask: int, value: int) -> list[int]:
    out = list(words)
    out[w] = (out[w] & ~mask) | value
    return out


def _rechk(words: list[int]) -> list[int]:
    """Recompute the checksum after a field change (so the intended check fails)."""
    return _rewrite(words, 7, 0xFF00, hm.checksum(words) << 8)


#: Descriptor corruptions, each aimed at one status (fn(words, exp_seq) -> words).
MUTATIONS: dict[str, tuple[str, Callable[[list[int], int], list[int]]]] = {
    # the magic alone wrong (checksum recomputed), and a sequence number the front end must
    # not adopt from a descriptor it cannot trust (the next good one would be BAD_SEQ): with
    # the checksum wrong too and the right sequence number, a front end that trusted a
    # descriptor with either check passing was not told apart
    "magic": ("BAD_MAGIC", lambda w, s: _rechk(_rewrite(_rewrite(w, 7, 0xFF, 0x5A), 7, 0xFFFF0000,
                                                        ((s + 5) & 0xFFFF) << 16))),
    "magic+checksum": ("BAD_MAGIC", lambda w, s: _rewrite(w, 7, 0xFF, 0x5A)),
    "checksum": ("BAD_CHECKSUM", lambda w, s: _rewrite(w, 7, 0xFF00, (((w[7] >> 8) & 0xFF) ^ 0x10) << 8)),
    "replay": ("BAD_SEQ", lambda w, s: _rechk(_rewrite(w, 7, 0xFFFF0000, ((s - 1) & 0xFFFF) << 16))),
    "conv": ("BAD_OPCODE", lambda w, s: _rechk(_rewrite(w, 0, 0xF, 2))),
    "opcode15": ("BAD_OPCODE", lambda w, s: _rechk(_rewrite(w, 0, 0xF, 15))),
    "dtype": ("BAD_DTYPE", lambda w, s: _rechk(_rewrite(w, 0, 0x300, 0x300))),
    "dtype2": ("BAD_DTYPE", lambda w, s: _rechk(_rewrite(w, 0, 0x300, 0x200))),
    "rsvd7": ("RSVD_NONZERO", lambda w, s: _rechk(_rewrite(w, 0, 0x80, 0x80))),
    "rsvd2": ("RSVD_NONZERO", lambda w, s: _rechk(_rewrite(w, 2, 1 << 31, 1 << 31))),
    "rsvd6": ("RSVD_NONZERO", lambda w, s: _rechk(_rewrite(w, 6, 1 << 20, 1 << 20))),
}


def _rand_mat(rng: np.random.Generator, r: int, c: int, dtype: int) -> np.ndarray:
    lo, hi = hm.sat_range(dtype)
    x = rng.integers(lo, hi + 1, size=(r, c))
    if rng.random() < 0.2:  # extremes
        x = rng.choice([lo, hi, 0, -1, 1], size=(r, c))
    return x


class _Layout:
    def __init__(self, p: HostParams) -> None:
        self.p = p
        self.top = 0
        self.end = p.mem_bytes // 2

    def take(self, nbytes: int) -> int | None:
        a = self.top
        if a + nbytes > self.end:
            return None
        self.top = a + (nbytes + 3) // 4 * 4
        return a


def _weights(p: HostParams, rng: np.random.Generator, wgt_size: int) -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
    """The weight region: a few K x N matrices (int8 and int16) one after the other.
    Returns the bytes and (offset, dtype, K, N) of each; the first of each dtype spans
    every MAC lane (N = n_max), so every lane scales and saturates in both dtypes."""
    mem = np.zeros(wgt_size, np.uint8)
    blocks = []
    off = 0
    for dtype in (0, 1, 0, 1):
        epw = 4 // hm.esize(dtype)
        k = int(rng.integers(1, p.k_max // epw + 1)) * epw
        n = int(rng.integers(1, p.n_max // epw + 1)) * epw if len(blocks) >= 2 else p.n_max
        nbytes = k * n * hm.esize(dtype)
        if off + nbytes > wgt_size:
            break
        hm.write_mat(mem, off, _rand_mat(rng, k, n, dtype), dtype)
        blocks.append((off, dtype, k, n))
        off += nbytes
    return mem, blocks


def _task(p: HostParams, rng: np.random.Generator, lay: _Layout, blocks: list[tuple[int, int, int, int]],
          tag: int) -> Step | None:
    off, dtype, k, n = blocks[int(rng.integers(len(blocks)))]
    pool = int(rng.random() < 0.4)
    m = int(rng.integers(1, p.m_max // 2 + 1)) * 2 if pool else int(rng.integers(1, p.m_max + 1))
    es = hm.esize(dtype)
    act = lay.take(m * k * es)
    out = lay.take((m // 2 if pool else m) * n * es)
    if act is None or out is None:
        return None
    shift = int(rng.integers(0, 12)) if dtype == 0 else int(rng.integers(0, 20))
    mult = int(rng.choice([0, 1, int(rng.integers(1, 1 << 16)), 0xFFFF]))
    if rng.random() < 0.25:  # the largest scale: most outputs of every lane saturate, both ways
        shift, mult = 0, 0xFFFF
    d = hm.Descriptor(opcode=hm.MATMUL, relu=int(rng.random() < 0.5), pool=pool, irq=int(rng.random() < 0.5),
                      dtype=dtype, tag=tag, m=m, n=n, k=k, shift=shift, act_addr=act, wgt_off=off, out_addr=out,
                      mult=mult)
    return Step("task", d, _rand_mat(rng, m, k, dtype), gap=int(rng.integers(0, 4)) * int(rng.random() < 0.5))


def _span(d: hm.Descriptor, region: str) -> int:
    """Bytes of a task's ``act``, ``wgt`` or ``out`` region (:func:`~lockstep.models.host.task_ranges`)."""
    lo, hi = hm.task_ranges(d, 0)[region]
    return hi - lo


def _bad(p: HostParams, rng: np.random.Generator, good: Step, sc: Scenario, which: str) -> Step:
    """A task step turned into one error class (range errors by their fields)."""
    d = good.desc
    es = d.es
    if which == "out_top":  # a good task whose result ends exactly at MEM_LIMIT (in range)
        return Step("task", d.with_(out_addr=sc.mem_limit - _span(d, "out")), good.act, None, good.gap, "OK")
    if which == "wgt_top":  # ... whose weights (K the smallest, so M * N bytes mostly pass
        # the region's end while K * N do not) end exactly at the region's end (what lies there)
        d = d.with_(k=4 // es)
        return Step("task", d.with_(wgt_off=sc.wgt_size - _span(d, "wgt")), good.act[:, :d.k], None, good.gap, "OK")
    if which in MUTATIONS:
        return Step("task", d, good.act, MUTATIONS[which], good.gap, MUTATIONS[which][0])
    bad = {
        "m0": {"m": 0}, "m_big": {"m": p.m_max + 1}, "k_word": {"k": d.k + 1 if es == 1 else d.k - 1},
        "n0": {"n": 0}, "pool_odd": {"pool": 1, "m": 1},
        "act_mis": {"act_addr": d.act_addr + 2}, "out_limit": {"out_addr": sc.mem_limit - 4},
        "out_wgt": {"out_addr": sc.wgt_base + 4}, "out_act": {"out_addr": d.act_addr},
        # one word past the region's end: a check of M * N bytes instead of K * N passes it
        # when M < K (host_top@d3c7 m089; wgt_top catches M > K)
        "wgt_past": {"wgt_off": sc.wgt_size - _span(d, "wgt") + 4}, "wgt_mis": {"wgt_off": d.wgt_off + 2},
        "nop": {"opcode": hm.NOP},
        # a NOP skips the dimension and range checks (docs/host.md section 5): a front end
        # that took it for a MATMUL there completed it OK all the same (@eb7c m079)
        "nop_bad": {"opcode": hm.NOP, "m": 0, "out_addr": sc.mem_limit - 4, "wgt_off": sc.wgt_size - 4},
    }[which]
    label = {"nop": "OK", "nop_bad": "OK"}.get(which, {"m": "BAD_DIMS", "k": "BAD_DIMS", "n": "BAD_DIMS", "p": "BAD_DIMS",
                                      "a": "ADDR_RANGE", "o": "ADDR_RANGE", "w": "WGT_RANGE"}[which[0]])
    return Step("task", d.with_(**bad), good.act, None, good.gap, label)


ERROR_KINDS = tuple(MUTATIONS) + ("m0", "m_big", "k_word", "n0", "pool_odd", "act_mis", "out_limit", "out_top",
                                  "out_wgt", "out_act", "wgt_past", "wgt_top", "wgt_mis", "nop", "nop_bad")


def make_scenario(name: str, p: HostParams, seed: int, tasks: int = 24) -> Scenario:
    """The steps of scenario ``name`` (:data:`SCENARIOS`) for parameters ``p``."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown host scenario {name!r}; known: {sorted(SCENARIOS)}")
    rng = np.random.default_rng(seed)
    b = p.mem_bytes
    wgt, blocks = _weights(p, rng, b // 4)
    sc = Scenario(name, b // 2, b // 4, 3 * b // 4 + b // 16, wgt)
    lay = _Layout(p)
    SCENARIOS[name](p, rng, sc, lay, blocks, tasks)
    return sc


def _stream(p, rng, sc, lay, blocks, tasks, err_every=0):
    for t in range(tasks):
        st = _task(p, rng, lay, blocks, 0x100 + t)
        if st is None:
            break
        if err_every and t % err_every == err_every - 1:
            st = _bad(p, rng, st, sc, ERROR_KINDS[(t // err_every) % len(ERROR_KINDS)])
        sc.steps.append(st)


def _sat_pool(p: HostParams, rng: np.random.Generator, sc: Scenario, lay: _Layout,
              blocks: list[tuple[int, int, int, int]]) -> list[Step]:
    """Max-pooled tasks whose even rows are 0 and whose odd row ``2i + 1`` is the extreme
    of the dtype with the signs of weight column ``c``, so its output in column ``c``
    clamps to the top and wins the pool: every lane's second scaler saturating upwards
    while its first stays 0 (random tasks clamp both rows of a pair alike). One set per
    dtype, over its N = n_max block."""
    steps: list[Step] = []
    for off, dtype, k, n in blocks:
        if n != p.n_max or p.m_max < 2 or any(st.desc.dtype == dtype for st in steps):
            continue
        w = hm.read_mat(sc.weights, off, k, n, dtype)
        lo, hi = hm.sat_range(dtype)
        es, pairs = hm.esize(dtype), min(p.m_max // 2, n)
        for c0 in range(0, n, pairs):
            act = np.zeros((2 * pairs, k), np.int64)
            for i in range(pairs):
                act[2 * i + 1] = np.where(w[:, (c0 + i) % n] >= 0, hi, lo)
            a, o = lay.take(2 * pairs * k * es), lay.take(pairs * n * es)
            if a is None or o is None:
                return steps
            d = hm.Descriptor(opcode=hm.MATMUL, relu=int(rng.random() < 0.5), pool=1, dtype=dtype,
                              tag=0x200 + len(steps), m=2 * pairs, n=n, k=k, act_addr=a, wgt_off=off, out_addr=o)
            steps.append(Step("task", d, act))
    return steps


def _unsaturated(sc: Scenario, lay: _Layout, sat: list[Step]) -> list[Step]:
    """The saturating tasks' extremes once more through a scaler that keeps them: every row
    the odd row of its pair (both scalers of a lane take them), pool and ReLU off,
    ``mult = 1`` and the smallest shift that fits the largest accumulator, so the
    accumulator's top bits (beyond 2**29 in int16) reach the output instead of clamping."""
    out = []
    for st in sat:
        d = st.desc
        act = st.act[np.arange(d.m) | 1]
        top = int(np.abs(act @ hm.read_mat(sc.weights, d.wgt_off, d.k, d.n, d.dtype)).max())
        shift = max(0, top.bit_length() - (8 * d.es - 1) + 1)
        st = _copy(lay, st, d.tag + 0x40, act, pool=0, relu=0, mult=1, shift=shift)
        if st is None:
            break
        out.append(st)
    return out


def _shift0(sc: Scenario, lay: _Layout, sat: list[Step]) -> list[Step]:
    """The saturating tasks' weights once more at ``shift = 0``, ``mult = 1``: rows ``2i``
    and ``2i + 1`` are all 0 but one element, ``-1`` or ``1`` against an even non-zero
    weight of the same column (the tasks of one dtype take the columns in turn, as in
    :func:`_sat_pool`), so that lane's accumulator is even and negative in both its
    scalers and passes them unshifted (its rounding adds nothing, its sign fill nothing:
    a fill that also set bit 0 showed only here, host_top@d3c7 m021 and @eb7c m071);
    the rows' other lanes get single weights, in range or clamping. Each twice: as it is,
    and max-pooled with row ``2i`` the dtype's extremes against the column's signs; the
    int8 ones a third time, pooled with the rows of each pair swapped."""
    out = []
    base: dict[int, int] = {}
    for st in sat:
        d = st.desc
        w = hm.read_mat(sc.weights, d.wgt_off, d.k, d.n, d.dtype)
        act = np.zeros((d.m, d.k), np.int64)
        c0 = base.get(d.dtype, 0)
        base[d.dtype] = c0 + d.m // 2
        for r in range(d.m):
            col = w[:, (c0 + r // 2) % d.n]
            even = np.flatnonzero((col != 0) & (col % 2 == 0))
            ks = even if even.size else np.flatnonzero(col != 0)
            if ks.size:
                kk = int(ks[r % ks.size])
                act[r, kk] = -1 if col[kk] > 0 else 1
        lo = hm.sat_range(d.dtype)[0]
        pooled = act.copy()  # ... and max-pooled: row 2i clamps to the bottom, so the pair's
        # second scaler (which only pooled tasks use) gives the maximum
        for i in range(0, d.m, 2):
            pooled[i] = np.where(w[:, (c0 + i // 2) % d.n] >= 0, lo, -lo - 1)
        # ... and with each pair's rows swapped: the other of the pair's two scalers shows
        # the even negative sum (host_top@d3c7 m021 and its like: a sign fill that also set
        # bit 0 survived in every odd scaler, the one the clamped row went through)
        swapped = pooled.copy()
        swapped[0::2], swapped[1::2] = pooled[1::2], pooled[0::2]
        # (int8 only: the scalers are the same for both element types, and the int16 copies
        # would crowd the random tasks out of the quick throughput episodes' memory)
        copies = [(d.tag + 0x60, act, 0), (d.tag + 0x70, pooled, 1)] + ([(d.tag + 0x50, swapped, 1)] if d.dtype == 0
                                                                          else [])
        for tag, a, pool in copies:
            cp = _copy(lay, st, tag, a, pool=pool, relu=0, mult=1, shift=0)
            if cp is None:
                return out
            out.append(cp)
    return out


def _copy(lay: _Layout, st: Step, tag: int, act: np.ndarray | None = None, **fields: int) -> Step | None:
    """Task step ``st`` with ``tag``, ``act`` (default its own) and ``fields`` changed, in
    regions of its own (``None`` when the layout is full)."""
    d = st.desc.with_(**fields)
    a, o = lay.take(_span(d, "act")), lay.take(_span(d, "out"))
    if a is None or o is None:
        return None
    return Step("task", d.with_(tag=tag, act_addr=a, out_addr=o), st.act if act is None else act)


def _sat_steps(p, rng, sc, lay, blocks, tasks):
    """The stream scenario's closing tasks (:func:`_sc_stream`), at most ``tasks - 1``."""
    sat = _sat_pool(p, rng, sc, lay, blocks)
    sat += _unsaturated(sc, lay, sat) + _shift0(sc, lay, sat)
    if p.n_kernels > 1:  # each twice, back to back behind doorbells of two: a busy kernel 0
        # hands the twin to kernel 1, so every kernel's lanes saturate both ways
        twins = [_copy(lay, st, st.desc.tag + 0x80) for st in sat]
        sat = [x for pair in zip(sat, twins) if pair[1] is not None for x in pair]
        for st in sat[::2]:
            st.batch = 2
    return sat[:max(0, tasks - 1) // 2 * 2]


def _sc_stream(p, rng, sc, lay, blocks, tasks):
    """Good tasks back to back, the first ``depth`` of them as one batch behind a single
    doorbell: bit-exact results, exec_cycles exact, PERF_BUSY = sum; the last ones (as many
    as there are, leaving one random task) max-pooled tasks whose odd rows saturate upwards
    (:func:`_sat_pool`), then the same extremes unsaturated (:func:`_unsaturated`), then
    their weights unshifted with even negative sums (:func:`_shift0`); with
    two kernels or more, each of them twice in a row, so kernel 1 runs them too.

    As many random tasks are drawn as leave room for those (counted on a copy of the
    layout and the generator first): drawn after ``tasks`` random tasks, they found the
    layout full at some seeds (host_top@eb7c m008, m048, m056 and m071 survived the
    campaign's seed of host_top_two_stream, whose 40 random tasks filled it)."""
    k = len(_sat_steps(p, copy.deepcopy(rng), sc, copy.deepcopy(lay), blocks, tasks))
    _stream(p, rng, sc, lay, blocks, tasks - k)
    sat = _sat_steps(p, rng, sc, lay, blocks, tasks)[:k]
    sc.steps += sat
    sc.steps[0].batch = min(p.depth, len(sc.steps) - (len(sat) if p.n_kernels > 1 else 0))
    sc.exact_cycles = p.n_kernels == 1


def _sc_errors(p, rng, sc, lay, blocks, tasks):
    """Every error class between good tasks (the next tasks still complete), NOP,
    doorbell overflow, a write to an owned slot, a bad CQ_HEAD, IRQs; with halt_on_error:
    each error completion halts the front end, and the host resumes it (per-edge only)."""
    _stream(p, rng, sc, lay, blocks, max(tasks, 2 * len(ERROR_KINDS)), err_every=2)
    at = len(sc.steps) // 3
    sc.steps[at:at] = [Step("doorbell_overflow"), Step("owned_write"), Step("cq_overflow")]
    sc.use_irq = True
    sc.halt_on_error = True
    sc.exact_cycles = p.n_kernels == 1


def _sc_backpressure(p, rng, sc, lay, blocks, tasks):
    """Random memory back-pressure and latency, a full SQ (tasks submitted with no gap)
    and a full CQ (the host stops consuming for a while): results unchanged, nothing lost."""
    _stream(p, rng, sc, lay, blocks, tasks)
    for st in sc.steps:
        st.gap = 0
    off = 0
    if p.n_kernels > 1 and sum(st.kind == "task" for st in sc.steps) >= 2 * p.depth + 5:
        # first, one completion waiting alone: depth + 1 tasks into an empty CQ, so one kernel
        # holds a completion and the other is idle; PERF_CQ_STALL counts that wait too
        # (host_top@eb7c m000, counting only while every kernel waited, survived the pair
        # below, where both kernels end up waiting)
        sc.steps.insert(0, Step("stop_cq"))
        sc.steps.insert(1 + p.depth + 1, Step("resume_cq"))
        off = p.depth + 3
    sc.steps.insert(off + 2, Step("stop_cq"))
    # depth + 2 tasks after the stop: enough to fill the CQ and stall a kernel, never more
    # than the SQ, the kernels and the CQ hold (the submitter would wait forever)
    sc.steps.insert(off + 2 + 1 + p.depth + 2, Step("resume_cq"))
    sc.bp_rate, sc.lat_rate = int(rng.integers(3, 10)), int(rng.integers(3, 10))
    sc.exact_cycles = False


def _sc_memerr(p, rng, sc, lay, blocks, tasks):
    """An error window of two words: the last word of one task's result (a write error)
    and the first word of the next task's activations (a read error; the layout puts
    them side by side): MEM_ERR for exactly those two, no write outside their result
    ranges, every other task exact."""
    _stream(p, rng, sc, lay, blocks, tasks)
    t1 = sc.steps[len(sc.steps) // 2].desc
    t2 = sc.steps[len(sc.steps) // 2 + 1].desc
    o_end = hm.task_ranges(t1, sc.wgt_base)["out"][1] // 4
    if t2.act_addr // 4 != o_end:
        raise AssertionError("memerr layout: the second task's activations must follow the first's result")
    sc.err_window = (o_end - 1, o_end + 1)
    sc.exact_cycles = False


def _sc_flush(p, rng, sc, lay, blocks, tasks):
    """A soft reset with tasks in flight and queued: each completes exactly once
    (ABORTED or done), then new tasks complete normally."""
    _stream(p, rng, sc, lay, blocks, tasks)
    for st in sc.steps:
        st.gap = 0
    sc.steps.insert(len(sc.steps) // 2, Step("flush", gap=int(rng.integers(20, 200))))
    sc.exact_cycles = False


SCENARIOS: dict[str, Callable[..., None]] = {
    "stream": _sc_stream, "errors": _sc_errors, "backpressure": _sc_backpressure, "memerr": _sc_memerr,
    "flush": _sc_flush,
}
