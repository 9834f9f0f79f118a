"""Pipeline schedules of the host library (docs/host.md section 10; spec 002 sections
2.4, 2.8, 2.9 and 4.2): a discrete-event model of the patent's three-stage pipeline, the
analytic busy-fraction model, the tuner (method 600), the event log's busy fraction, a
Fig. 7 timing chart, and the reorder buffer that returns results in submission order.

No cocotb here: the coroutine pipeline in ``verif/host/`` calls these. numpy and the
standard library; matplotlib only inside :func:`timing_chart`, imported lazily.

**The model.** Each packet passes the stages *pre* (host pre-processing), *exec* and
*post* (host post-processing). The exec stage is the device path: a host->device DMA of
the data (``dma_wr``), the packet information (``desc``, the descriptor and doorbell, on
the same DMA channel), the kernel (``kernel``), and a device->host DMA of the result
(``dma_rd``). Per-packet times of these six steps are constants or drawn from a seeded
RNG (:func:`draw_times`; one generator per step, so a run is reproducible and one step's
distribution does not change another's draws).

**Workers** (``pre`` and ``post``): in the ``serial`` and ``lockstep`` modes a stage
handles one packet at a time and its ``w`` workers share it, so it takes ``time / w``
(the patent's "more cores for a thread"); in the ``stream`` mode each worker is a server
that takes whole packets (``time`` each, ``w`` in parallel). Both give the stage the
throughput ``w / time`` the tuner and the bottleneck model use. The exec stage has one
DMA channel per direction and ``n_kernels`` kernels.

**Modes** (:func:`simulate`):

* ``serial``: one packet at a time through all steps.
* ``lockstep`` (the patent's pipeline 500): period ``j`` has packet ``j - s`` in stage
  ``s``; the period lasts as long as the slowest of its stages' current packets (a
  barrier), so ``n + S - 1`` periods. One packet is in the exec stage per period, so a
  second kernel adds nothing (packet ``i`` runs on kernel ``i mod n_kernels``).
* ``stream``: free-running stages joined by bounded FIFO queues of ``queue_depth``
  packets; ``put`` blocks while the queue is full (the worker holds its packet). The exec
  stage's host side writes the data, waits for a free SQ slot (``sq_depth``, released when
  a kernel takes the task), writes the packet information; the lowest-numbered idle kernel
  takes the oldest queued task at once; one reader thread reads results back in
  completion order and puts them to the post queue.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..record import ParamError

__all__ = [
    "KINDS", "MODES", "Event", "SimResult", "Model", "Tuning", "draw_times", "simulate", "serial_model",
    "lockstep_model", "stream_model", "tune", "busy_fraction", "timing_chart", "InOrder", "stamp",
]

#: Event kinds (the exec stage's steps between pre and post), in pipeline order.
KINDS = ("pre", "dma_wr", "desc", "kernel", "dma_rd", "post")
MODES = ("serial", "lockstep", "stream")
#: Stages with host workers.
_HOST_STAGES = ("pre", "post")


class Event(NamedTuple):
    """One busy interval: ``kind`` (:data:`KINDS`), the packet's ``tag``, the
    ``resource`` it occupied (``pre`` / ``pre.<w>``, ``dma_wr``, ``kernel<k>``,
    ``dma_rd``, ``post`` / ``post.<w>``), ``start`` and ``end``."""

    kind: str
    tag: int
    resource: str
    start: float
    end: float


# =====================================================================================
# Stage times
# =====================================================================================

def draw_times(n: int, spec: Mapping[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    """Per-packet times of every step (:data:`KINDS`; a missing step takes 0).

    A step's spec is a number (constant), a sequence of ``n`` numbers, ``("uniform", lo,
    hi)`` or ``("exp", mean)``. Random steps draw from
    ``np.random.default_rng([seed, index of the step])``.
    """
    bad = set(spec) - set(KINDS)
    if bad:
        raise ParamError(f"draw_times: unknown step(s) {sorted(bad)}; the steps are {KINDS}")
    out = {}
    for i, kind in enumerate(KINDS):
        s = spec.get(kind, 0.0)
        rng = np.random.default_rng([seed, i])
        if isinstance(s, tuple) and s and isinstance(s[0], str):
            if s[0] == "uniform" and len(s) == 3 and 0 <= s[1] <= s[2]:
                t = rng.uniform(s[1], s[2], n)
            elif s[0] == "exp" and len(s) == 2 and s[1] >= 0:
                t = rng.exponential(s[1], n)
            else:
                raise ParamError(f"draw_times: {kind}={s!r}: use ('uniform', lo, hi) with 0 <= lo <= hi or "
                                 "('exp', mean) with mean >= 0")
        elif np.ndim(s) == 0:
            t = np.full(n, float(s))
        else:
            t = np.asarray(s, dtype=np.float64)
            if t.shape != (n,):
                raise ParamError(f"draw_times: {kind} has {t.size} times for {n} packets")
        if (t < 0).any() or not np.isfinite(t).all():
            raise ParamError(f"draw_times: {kind} times must be finite and >= 0")
        out[kind] = t.astype(np.float64)
    return out


# =====================================================================================
# A small discrete-event engine: generator processes, bounded stores, semaphores
# =====================================================================================

class _Sim:
    """Processes are generators that yield commands; events at equal times run in the
    order they were scheduled (deterministic)."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Generator, Any]] = []
        self._n = 0

    def at(self, t: float, proc: Generator, value: Any = None) -> None:
        heapq.heappush(self._heap, (t, self._n, proc, value))
        self._n += 1

    def spawn(self, proc: Generator) -> None:
        self.at(self.now, proc)

    def run(self) -> None:
        while self._heap:
            t, _, proc, value = heapq.heappop(self._heap)
            self.now = t
            try:
                cmd = proc.send(value)
            except StopIteration:
                continue
            cmd(self, proc)


def _wait(dt: float) -> Callable[[_Sim, Generator], None]:
    return lambda sim, proc: sim.at(sim.now + dt, proc)


class _Store:
    """A FIFO of bounded capacity (None: unbounded). ``get`` waiters are served by
    priority, then arrival; ``put`` waiters in arrival order."""

    def __init__(self, cap: int | None) -> None:
        self.cap, self.items = cap, deque()
        self._getters: list[tuple[int, int, Generator]] = []
        self._putters: deque[tuple[Generator, Any]] = deque()
        self._n = 0

    def put(self, item: Any) -> Callable[[_Sim, Generator], None]:
        def cmd(sim: _Sim, proc: Generator) -> None:
            if self._getters:
                sim.at(sim.now, heapq.heappop(self._getters)[2], item)
                sim.at(sim.now, proc)
            elif self.cap is None or len(self.items) < self.cap:
                self.items.append(item)
                sim.at(sim.now, proc)
            else:
                self._putters.append((proc, item))
        return cmd

    def get(self, prio: int = 0) -> Callable[[_Sim, Generator], None]:
        def cmd(sim: _Sim, proc: Generator) -> None:
            if self.items:
                sim.at(sim.now, proc, self.items.popleft())
                if self._putters:
                    putter, item = self._putters.popleft()
                    self.items.append(item)
                    sim.at(sim.now, putter)
            else:
                heapq.heappush(self._getters, (prio, self._n, proc))
                self._n += 1
        return cmd


class _Sem:
    """A counting semaphore with FIFO waiters."""

    def __init__(self, count: int) -> None:
        self.count, self._waiters = count, deque()

    def acquire(self) -> Callable[[_Sim, Generator], None]:
        def cmd(sim: _Sim, proc: Generator) -> None:
            if self.count > 0:
                self.count -= 1
                sim.at(sim.now, proc)
            else:
                self._waiters.append(proc)
        return cmd

    def release(self, sim: _Sim) -> None:
        if self._waiters:
            sim.at(sim.now, self._waiters.popleft())
        else:
            self.count += 1


# =====================================================================================
# The discrete-event simulation
# =====================================================================================

@dataclass(frozen=True)
class SimResult:
    """A run of :func:`simulate`.

    Attributes:
        mode: the mode.
        events: the event log, sorted by start (then end, step, tag).
        total: the time the last packet left post-processing.
        busy: per kernel, the busy fraction over ``[0, total]``.
        done: tags in the order they left post-processing.
        times: the per-packet step times used (:func:`draw_times`).
    """

    mode: str
    events: list[Event]
    total: float
    busy: tuple[float, ...]
    done: list[int]
    times: dict[str, np.ndarray]


def _workers(workers: Mapping[str, int] | None) -> dict[str, int]:
    w = {"pre": 1, "post": 1}
    for k, v in (workers or {}).items():
        if k not in _HOST_STAGES:
            raise ParamError(f"workers: {k!r} is not a host stage; workers are given for {_HOST_STAGES} (the exec "
                             "stage's parallelism is n_kernels)")
        if not isinstance(v, int) or v < 1:
            raise ParamError(f"workers[{k!r}]={v!r}: must be an int >= 1")
        w[k] = v
    return w


def _step(log: list[Event], kind: str, tag: int, resource: str, t0: float, dt: float) -> float:
    """Log step ``kind`` of packet ``tag`` on ``resource`` from ``t0`` for ``dt``; the end."""
    t1 = t0 + dt
    log.append(Event(kind, tag, resource, t0, t1))
    return t1


def _exec_steps(tag: int, k: int, t: dict[str, list[float]], i: int, t0: float, log: list[Event]) -> float:
    """dma_wr, desc, kernel, dma_rd of packet ``i`` back to back from ``t0``; the end."""
    for kind, res in (("dma_wr", "dma_wr"), ("desc", "dma_wr"), ("kernel", f"kernel{k}"), ("dma_rd", "dma_rd")):
        t0 = _step(log, kind, tag, res, t0, t[kind][i])
    return t0


def _serial(n: int, t: dict[str, list[float]], w: dict[str, int], nk: int) -> tuple[list[Event], list[int]]:
    log: list[Event] = []
    now = 0.0
    for i in range(n):
        now = _step(log, "pre", i, "pre", now, t["pre"][i] / w["pre"])
        now = _exec_steps(i, i % nk, t, i, now, log)
        now = _step(log, "post", i, "post", now, t["post"][i] / w["post"])
    return log, list(range(n))


def _lockstep(n: int, t: dict[str, list[float]], w: dict[str, int], nk: int) -> tuple[list[Event], list[int]]:
    log: list[Event] = []
    start = 0.0
    for j in range(n + 2):            # S = 3 stages: n + S - 1 periods
        ends = [start]
        if j < n:                     # stage 0: packet j
            ends.append(_step(log, "pre", j, "pre", start, t["pre"][j] / w["pre"]))
        if 0 <= j - 1 < n:            # stage 1: packet j - 1
            i = j - 1
            ends.append(_exec_steps(i, i % nk, t, i, start, log))
        if 0 <= j - 2 < n:            # stage 2: packet j - 2
            i = j - 2
            ends.append(_step(log, "post", i, "post", start, t["post"][i] / w["post"]))
        start = max(ends)             # the barrier: the period ends with its slowest stage
    return log, list(range(n))


def _stream(n: int, t: dict[str, list[float]], w: dict[str, int], nk: int, sq_depth: int,
            qd: int) -> tuple[list[Event], list[int]]:
    sim = _Sim()
    log: list[Event] = []
    done: list[int] = []
    source = deque(range(n))
    q_pre, q_post = _Store(qd), _Store(qd)
    sq, cq = _Store(None), _Store(None)           # the device's SQ (bounded by slots) and completions
    slots, wr_ch, rd_ch = _Sem(sq_depth), _Sem(1), _Sem(1)

    def step(kind: str, i: int, resource: str) -> Generator:
        """Packet ``i``'s step ``kind`` on ``resource``: take its time, then log it."""
        t0, dt = sim.now, t[kind][i]
        yield _wait(dt)
        _step(log, kind, i, resource, t0, dt)     # ends at sim.now (t0 + dt)

    def pre(wk: int) -> Generator:
        while source:
            i = source.popleft()
            yield from step("pre", i, f"pre.{wk}")
            yield q_pre.put(i)

    def feeder() -> Generator:                    # the exec stage's host thread: data, slot, packet info
        while True:
            i = yield q_pre.get()
            yield wr_ch.acquire()
            yield from step("dma_wr", i, "dma_wr")
            wr_ch.release(sim)
            yield slots.acquire()
            yield wr_ch.acquire()
            yield from step("desc", i, "dma_wr")
            wr_ch.release(sim)
            yield sq.put(i)

    def kernel(k: int) -> Generator:
        while True:
            i = yield sq.get(prio=k)                 # the lowest-numbered idle kernel takes it
            slots.release(sim)
            yield from step("kernel", i, f"kernel{k}")
            yield cq.put(i)

    def reader() -> Generator:
        while True:
            i = yield cq.get()
            yield rd_ch.acquire()
            yield from step("dma_rd", i, "dma_rd")
            rd_ch.release(sim)
            yield q_post.put(i)

    def post(wk: int) -> Generator:
        while True:
            i = yield q_post.get()
            yield from step("post", i, f"post.{wk}")
            done.append(i)

    for wk in range(w["pre"]):
        sim.spawn(pre(wk))
    sim.spawn(feeder())
    for k in range(nk):
        sim.spawn(kernel(k))
    sim.spawn(reader())
    for wk in range(w["post"]):
        sim.spawn(post(wk))
    sim.run()
    if len(done) != n:
        raise RuntimeError(f"stream pipeline: {len(done)} of {n} packets finished (deadlock)")
    return log, done


def simulate(mode: str, n: int, times: Mapping[str, Any], *, workers: Mapping[str, int] | None = None,
             n_kernels: int = 1, sq_depth: int = 8, queue_depth: int = 2, seed: int = 0) -> SimResult:
    """Run ``n`` packets (tags ``0 .. n-1``) through the pipeline in ``mode``.

    Args:
        mode: ``serial``, ``lockstep`` or ``stream``.
        n: packets.
        times: per-step time specs (:func:`draw_times`): ``pre``, ``dma_wr``, ``desc``,
            ``kernel``, ``dma_rd``, ``post``.
        workers: ``{"pre": w, "post": w}`` (default 1 each).
        n_kernels: kernels at the device.
        sq_depth: SQ slots (stream): tasks queued at the device beyond the running ones.
        queue_depth: capacity of the queues between stages (stream).
        seed: the RNG seed of random step times.
    """
    if mode not in MODES:
        raise ParamError(f"simulate: mode {mode!r} must be one of {MODES}")
    if n < 1 or n_kernels < 1 or sq_depth < 1 or queue_depth < 1:
        raise ParamError(f"simulate: n={n}, n_kernels={n_kernels}, sq_depth={sq_depth}, queue_depth={queue_depth}: "
                         "all must be >= 1")
    w = _workers(workers)
    times_np = draw_times(n, times, seed)
    t = {k: v.tolist() for k, v in times_np.items()}      # Python floats inside the model
    if mode == "serial":
        log, done = _serial(n, t, w, n_kernels)
    elif mode == "lockstep":
        log, done = _lockstep(n, t, w, n_kernels)
    else:
        log, done = _stream(n, t, w, n_kernels, sq_depth, queue_depth)
    log.sort(key=lambda e: (e.start, e.end, KINDS.index(e.kind), e.tag))
    total = max(e.end for e in log)
    busy = tuple(busy_fraction(log, f"kernel{k}", 0.0, total) for k in range(n_kernels))
    return SimResult(mode, log, total, busy, done, times_np)


# =====================================================================================
# The analytic model (spec 4.2)
# =====================================================================================

class Model(NamedTuple):
    """The analytic model's answer.

    Attributes:
        busy: accelerator busy fraction in steady state (with several kernels, their mean).
        total: time for n tasks by the spec's formula (spec 4.2).
        period: steady-state time between task completions.
        exact: time for n tasks with constant times, period by period; equals ``total``
            except in lock-step, where the spec's ``(n + S - 1) max`` counts every fill
            and drain period as a full one (see :func:`lockstep_model`).
    """

    busy: float
    total: float
    period: float
    exact: float


def _stage_times(p: float, e: float, q: float, dma_wr: float, desc: float, dma_rd: float,
                 workers: Mapping[str, int] | None) -> tuple[float, float, float]:
    w = _workers(workers)
    return p / w["pre"], dma_wr + desc + e + dma_rd, q / w["post"]


def serial_model(p: float, e: float, q: float, n: int, *, dma_wr: float = 0.0, desc: float = 0.0,
                 dma_rd: float = 0.0, workers: Mapping[str, int] | None = None) -> Model:
    """No pipeline: ``U = e / (p + x + q)``, total ``n (p + x + q)`` with the exec stage
    ``x = dma_wr + desc + e + dma_rd`` (``x = e`` without DMA times)."""
    sp, sx, sq = _stage_times(p, e, q, dma_wr, desc, dma_rd, workers)
    c = sp + sx + sq
    return Model(e / c, n * c, c, n * c)


def lockstep_model(p: float, e: float, q: float, n: int, *, dma_wr: float = 0.0, desc: float = 0.0,
                   dma_rd: float = 0.0, workers: Mapping[str, int] | None = None) -> Model:
    """The lock-step pipeline (S = 3 stages) with constant times: ``U = e / max(p, x, q)``
    in steady state, ``total = (n + S - 1) max(p, x, q)`` (spec 4.2).

    ``exact``: packet ``i`` is in stage ``s`` during period ``i + s`` and a period lasts
    as long as its slowest *occupied* stage, so the fill and drain periods, where some
    stages are empty, can be shorter than ``max``:
    ``exact = sum over periods j of max(t_s : 0 <= j - s < n)``. It equals ``total``
    when the first and the last stage are (among) the slowest; otherwise ``total`` is an
    upper bound (p=3, e=2, q=1, n=4: total 18, exact 3+3+3+3+2+1 = 15).
    """
    t = _stage_times(p, e, q, dma_wr, desc, dma_rd, workers)
    s = len(t)
    exact = sum(max(t[k] for k in range(s) if 0 <= j - k < n) for j in range(n + s - 1))
    return Model(e / max(t), (n + s - 1) * max(t), max(t), exact)


def stream_model(p: float, e: float, q: float, n: int, *, dma_wr: float = 0.0, desc: float = 0.0,
                 dma_rd: float = 0.0, workers: Mapping[str, int] | None = None, n_kernels: int = 1) -> Model:
    """The stream pipeline as a bottleneck model: the period is the largest occupancy per
    server over the resources (pre workers, the write channel, the kernels, the read
    channel, post workers): ``T = max(p/w_pre, dma_wr + desc, e/n_kernels, dma_rd,
    q/w_post)``; ``U = e / (n_kernels T)``; total = one packet's latency plus
    ``(n - 1) T`` (exact for constant times with one server per resource)."""
    w = _workers(workers)
    period = max(p / w["pre"], dma_wr + desc, e / n_kernels, dma_rd, q / w["post"])
    latency = p + dma_wr + desc + e + dma_rd + q
    total = latency + (n - 1) * period
    return Model(e / (n_kernels * period), total, period, total)


# =====================================================================================
# The tuner (method 600)
# =====================================================================================

@dataclass(frozen=True)
class Tuning:
    """The tuner's answer: new ``workers`` per stage, the stage ``times`` they give, the
    ``period`` (their maximum) and the ``period_before``."""

    workers: dict[str, int]
    times: dict[str, float]
    period: float
    period_before: float


def tune(times: Mapping[str, float], workers: Mapping[str, int], *, pool: int | None = None,
         fixed: Iterable[str] = ("exec",)) -> Tuning:
    """Method 600, block 620: reassign a fixed pool of host workers across the stages to
    equalise stage durations.

    A stage's work is its mean time times its current workers (``times`` are measured
    with ``workers``; a stage missing from ``workers`` has 1); a stage with ``w`` workers
    then takes ``work / w``. The ``fixed`` stages (the device) keep their workers. Every
    movable stage gets at least one worker; each further worker of the pool (default:
    the movable stages' current total) goes to the stage with the largest current
    ``work / w`` (the first such stage in ``times`` order on a tie). Adding a worker to
    the current maximum is the only move that can lower the maximum, so this minimises
    ``max(work / w)`` and is deterministic.
    """
    fixed = set(fixed)
    names = list(times)
    cur = {s: int(workers.get(s, 1)) for s in names}
    if any(v < 1 for v in cur.values()):
        raise ParamError(f"tune: workers {cur} must all be >= 1")
    work = {s: float(times[s]) * cur[s] for s in names}
    movable = [s for s in names if s not in fixed]
    pool = sum(cur[s] for s in movable) if pool is None else pool
    if pool < len(movable):
        raise ParamError(f"tune: a pool of {pool} cannot give each of {movable} a worker")
    new = {s: (cur[s] if s in fixed else 1) for s in names}
    for _ in range(pool - len(movable)):
        best = max(movable, key=lambda s: (work[s] / new[s], -movable.index(s)))
        new[best] += 1
    t = {s: work[s] / new[s] for s in names}
    return Tuning(new, t, max(t.values()), max(float(times[s]) for s in names))


# =====================================================================================
# Metrics and the chart (spec 2.8, 2.9)
# =====================================================================================

def _match(resource: str) -> Callable[[str], bool]:
    if resource.endswith("*"):
        pre = resource[:-1]
        return lambda r: r.startswith(pre)
    return lambda r: r == resource


def busy_fraction(events: Iterable[Event], resource: str, t0: float, t1: float) -> float:
    """The fraction of ``[t0, t1]`` in which ``resource`` is busy (the union of its
    events' intervals; ``"pre*"`` matches every resource starting with ``pre``)."""
    if t1 <= t0:
        raise ValueError(f"busy_fraction: empty window [{t0}, {t1}]")
    m = _match(resource)
    iv = sorted((max(e.start, t0), min(e.end, t1)) for e in events if m(e.resource))
    busy, cur_s, cur_e = 0.0, None, None
    for s, e in iv:
        if e <= s:
            continue
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        busy += cur_e - cur_s
    return busy / (t1 - t0)


def timing_chart(events: Sequence[Event], path: str, title: str = "") -> str:
    """A PNG in the style of the patent's Fig. 7: per kernel a row of task starts (circles
    for kernel A, x for kernel B) with a line for each task's duration, rows for the DDR
    writes of data and of packet information (dots), and a row for the result reads
    (squares for A, plus signs for B). Returns ``path``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    on = {e.tag: int(e.resource[6:]) for e in events if e.kind == "kernel"}
    kernels = sorted(set(on.values())) or [0]
    name = {k: "AB"[k] if k < 2 else str(k) for k in kernels}
    start_mark, read_mark = {0: "o", 1: "x"}, {0: "s", 1: "+"}
    rows: list[str] = []
    for k in kernels:
        rows += [f"kernel {name[k]}", f"DDR write {name[k]} (data)", f"DDR write {name[k]} (packet)",
                 f"DDR read {name[k]}"]
    y = {r: len(rows) - i for i, r in enumerate(rows)}
    fig = Figure(figsize=(10, 1 + 0.5 * len(rows)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for e in events:
        k = on.get(e.tag, kernels[0])
        colour = f"C{k}"
        if e.kind == "kernel":
            yy = y[f"kernel {name[k]}"]
            ax.plot([e.start, e.end], [yy, yy], color=colour, lw=1.5)
            ax.plot([e.start], [yy], marker=start_mark.get(k, "d"), color=colour, ms=7, mfc="none")
        elif e.kind in ("dma_wr", "desc"):
            yy = y[f"DDR write {name[k]} ({'data' if e.kind == 'dma_wr' else 'packet'})"]
            ax.plot([e.start, e.end], [yy, yy], color=colour, lw=0.8, alpha=0.5)
            ax.plot([e.start], [yy], marker=".", color=colour, ms=6)
        elif e.kind == "dma_rd":
            yy = y[f"DDR read {name[k]}"]
            ax.plot([e.start, e.end], [yy, yy], color=colour, lw=0.8, alpha=0.5)
            ax.plot([e.start], [yy], marker=read_mark.get(k, "^"), color=colour, ms=7, mfc="none")
    ax.set_yticks(list(y.values()))
    ax.set_yticklabels(list(y))
    ax.set_ylim(0.5, len(rows) + 0.5)
    ax.set_xlabel("time")
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    return path


def stamp(packets: Iterable[Any], events: Iterable[Event]) -> None:
    """Fill ``t_enter`` / ``t_exit`` of packets (objects with ``tag`` and the
    ``TaskPacket`` dicts) from an event log: ``pre``, ``exec`` (first exec step's start to
    the last one's end) and ``post``."""
    span: dict[tuple[int, str], list[float]] = {}
    for e in events:
        st = e.kind if e.kind in ("pre", "post") else "exec"
        s = span.setdefault((e.tag, st), [e.start, e.end])
        s[0], s[1] = min(s[0], e.start), max(s[1], e.end)
    for p in packets:
        for st in ("pre", "exec", "post"):
            if (p.tag, st) in span:
                p.t_enter[st], p.t_exit[st] = span[(p.tag, st)]


# =====================================================================================
# Results in submission order (spec 2.12; docs/host.md section 10)
# =====================================================================================

class InOrder:
    """A reorder buffer: results return to the application in submission order per
    stream, whatever order tasks complete in (keyed by tag). A tag may not be in flight
    twice; it is free again once its result has been returned."""

    def __init__(self) -> None:
        self._order: dict[int, deque[int]] = {}
        self._stream: dict[int, int] = {}
        self._done: dict[int, Any] = {}

    def submit(self, tag: int, stream: int = 0) -> None:
        """Register a task in submission order."""
        if tag in self._stream:
            raise ValueError(f"InOrder: tag {tag} is already in flight (stream {self._stream[tag]})")
        self._stream[tag] = stream
        self._order.setdefault(stream, deque()).append(tag)

    def complete(self, tag: int, result: Any) -> list[tuple[int, Any]]:
        """Take a completion; return the ``(tag, result)`` pairs of its stream that are
        now due, in submission order (possibly none)."""
        if tag not in self._stream:
            raise ValueError(f"InOrder: completion of tag {tag}, which is not in flight")
        if tag in self._done:
            raise ValueError(f"InOrder: tag {tag} completed twice")
        self._done[tag] = result
        q = self._order[self._stream[tag]]
        out = []
        while q and q[0] in self._done:
            t = q.popleft()
            out.append((t, self._done.pop(t)))
            del self._stream[t]
        return out

    @property
    def in_flight(self) -> int:
        """Tasks submitted and not yet returned."""
        return len(self._stream)

    def waiting(self, stream: int = 0) -> list[int]:
        """Tags of ``stream`` not yet returned, oldest first."""
        return list(self._order.get(stream, ()))
