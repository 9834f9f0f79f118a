"""pyuvm test of the host library on ``host_top`` (docs/host.md section 10): an
application submits tasks through :class:`~.pipeline.HostLibrary` in one mode; the test
checks

* every task returns exactly once, in submission order per stream, status OK;
* each result equals an independent float -> fixed -> numpy reference
  (``dequantize(kernel_ref(quantize(x), quantize(w)))``), bit for bit;
* route ``both`` tasks compared equal on the accelerator and the host path;
* the weights moved once: the device's DMA byte counter equals the weight image plus
  each task's activations (``MemoryMap`` counters agree), and a second pass over the
  same layers moves no weight byte;
* the bounded queues never held more than their depth;
* the accelerator's busy fraction: PERF_BUSY / cycles of the run against the kernel
  intervals seen on the pins (within 1 cycle per task, modulo ``2**cnt_bits``: the
  counter wraps; the fractions reported come from the pins), and in lock-step with constant
  times the period structure (packet i in stage s during period i + s: ``n + 2``
  periods).

Options: ``mode``, ``tasks``, ``times`` (``{"pre": c, "post": c}`` or random specs as
:func:`~lockstep.models.host.pipe.draw_times`), ``workers``, ``shape`` (M, K, N),
``layers``, ``streams``, ``both_every`` (every k-th task on route ``both``). The summary
carries the measured figures ``ci/host_report.py`` tabulates.
"""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import SimTimeoutError, with_timeout
from pyuvm import uvm_test

from lockstep.models import host as hm
from lockstep.models.host.params import HostParams
from lockstep.models.host.lib import dequantize, quantize, split_task
from lockstep.models.host.pipe import busy_fraction, timing_chart

from ..context import CLOCK_NS, TbContext, start
from ..coverage import Covergroup
from .driver import HostDriver
from .pipeline import HostLibrary, Task

__all__ = ["HostPipeTest"]


def make_tasks(p: HostParams, rng: np.random.Generator, n: int, shape: tuple[int, int, int] | None, layers: int,
               streams: int, both_every: int, dtype: int, split: bool = False) -> tuple[dict, list[Task]]:
    """Layers of float weights and ``n`` float tasks: shapes inside ``p``'s limits and
    whole words, or with ``split`` any K up to ``k_max`` and M, N up to about twice their
    limits (the library cuts and pads them)."""
    epw = 4 // hm.esize(dtype)
    ws = {}
    for li in range(layers):
        if shape:
            k, nn = shape[1], shape[2]
        elif split:
            k = int(rng.integers(1, p.k_max - epw + 2))
            nn = int(rng.integers(1, 2 * p.n_max + 4))
        else:
            k = int(rng.integers(1, p.k_max // epw + 1)) * epw
            nn = int(rng.integers(1, p.n_max // epw + 1)) * epw
        ws[f"layer{li}"] = (rng.standard_normal((k, nn)) * 2).astype(np.float32)
    tasks = []
    for i in range(n):
        key = f"layer{int(rng.integers(layers))}" if not shape else f"layer{i % layers}"
        k = ws[key].shape[0]
        pool = bool(rng.random() < 0.3) and not shape
        m_top = p.m_max + 1 if split else p.m_max // 2 + 1
        m = shape[0] if shape else int(rng.integers(1, m_top)) * (2 if pool else 1)
        x = (rng.standard_normal((m, k)) * 3).astype(np.float32)
        if i % 7 == 3:
            x[0, 0] = np.nan  # defined: NaN -> 0
        route = "both" if both_every and i % both_every == both_every - 1 else "accel"
        tasks.append(Task(x, key, relu=bool(rng.random() < 0.5), pool=pool, stream=i % streams, route=route))
    return ws, tasks


def _stage_bound(spec) -> int:
    """A generous bound on one packet's stage time (a number, ("uniform", lo, hi) or
    ("exp", mean)) for the watchdog."""
    if isinstance(spec, tuple):
        return int(spec[2]) if spec[0] == "uniform" else int(20 * spec[1])
    return int(np.max(spec))


class HostPipeTest(uvm_test):
    """The library in one mode on host_top (module docstring)."""

    def build_phase(self) -> None:
        self.ctx = TbContext.from_env()
        self.p = HostParams.from_dict(self.ctx.params)

    async def run_phase(self) -> None:
        self.raise_objection()
        ctx, p = self.ctx, self.p
        await start(cocotb.top)
        drv = HostDriver(cocotb.top, p)
        rng = np.random.default_rng(ctx.seed)
        dtype = int(ctx.opt("dtype", 0))
        shape = tuple(ctx.opt("shape", ())) or None
        ws, tasks = make_tasks(p, rng, int(ctx.opt("tasks", 16)), shape, int(ctx.opt("layers", 3)),
                               int(ctx.opt("streams", 1)), int(ctx.opt("both_every", 0)), dtype,
                               bool(ctx.opt("split", False)))
        frac, wfrac, ofrac = (2, 3, 2) if dtype == 0 else (6, 6, 6)
        lib = HostLibrary(drv, p, ws, dtype=dtype, frac=frac, wfrac=wfrac, ofrac=ofrac,
                          mode=ctx.opt("mode", "stream"), times=ctx.opt("times", {"pre": 50, "post": 50}),
                          workers=ctx.opt("workers", None), queue_depth=int(ctx.opt("queue_depth", 2)), seed=ctx.seed)
        await drv.tp_write("SEED", ctx.seed or 1)
        await drv.tp_write("BP_RATE", int(ctx.opt("bp_rate", 0)))
        await drv.tp_write("LAT_RATE", int(ctx.opt("lat_rate", 0)))
        await lib.start()
        w_bytes = lib.img.nbytes
        c0 = drv.now()
        errs: list[str] = []
        # a watchdog: a pipeline that loses a packet or deadlocks fails instead of hanging
        budget = 20000 + 40 * sum(t.x.size for t in tasks) + 4000 * len(tasks) * (1 + bool(ctx.opt("split", False)))
        budget += sum(_stage_bound(v) for v in lib.times.values()) * 4 * len(tasks)
        try:
            res = await with_timeout(lib.run(tasks), budget * CLOCK_NS, "ns")
        except SimTimeoutError:
            res = list(lib.results)
            errs.append(f"watchdog: {len(res)} of {len(tasks)} results after {budget} cycles")
        c1 = drv.now()
        # the second pass over the same layers moves no weight byte
        again = lib.wmap.upload_weights_once(lib.wq, dtype)
        if again.moved:
            errs.append(f"the weights moved again ({again.moved} bytes) on the second upload")
        # exactly once, in order per stream, bit-exact
        by_stream: dict[int, list[int]] = {}
        for t_i, t in enumerate(tasks):
            by_stream.setdefault(t.stream, []).append(t_i)
        got: dict[int, list] = {}
        for r in res:
            got.setdefault(r.stream, []).append(r)
        for s, idx in by_stream.items():
            rs = got.get(s, [])
            if [r.tag for r in rs] != list(idx):  # tags are 0.. in submission order
                errs.append(f"stream {s}: results in order {[r.tag for r in rs][:10]}..., submitted {idx[:10]}...")
        for r in res:
            t = tasks[r.tag]
            a = quantize(t.x, dtype, frac)[0]
            w = quantize(ws[t.layer], dtype, wfrac)[0]
            d = hm.Descriptor(m=a.shape[0], k=a.shape[1], n=w.shape[1], dtype=dtype, relu=int(t.relu),
                              pool=int(t.pool), mult=1, shift=frac + wfrac - ofrac)
            ref = dequantize(hm.kernel_ref(a, w, d), dtype, ofrac)
            if r.status != "OK":
                errs.append(f"task {r.tag}: status {r.status} ({r.error})")
            elif not np.array_equal(r.data, ref):
                errs.append(f"task {r.tag}: result differs from the reference "
                            f"(first at {np.argwhere(r.data != ref)[0].tolist()})")
        if len(res) != len(tasks):
            errs.append(f"{len(res)} results for {len(tasks)} tasks")
        # bytes moved: weights once plus every task's activations (K padded to whole
        # words); results read once (N padded)
        sps = [split_task(*t.x.shape, ws[t.layer].shape[1], p, dtype, t.pool) for t in tasks if t.route != "host"]
        a_bytes = sum(s.m * s.kp * hm.esize(dtype) for s in sps)
        o_bytes = sum((s.m // (2 if s.pool else 1)) * s.np_ * hm.esize(dtype) for s in sps)
        ctx.summary["hw_tasks"] = sum(s.count for s in sps)
        dma_wr, dma_rd = await drv.tp_read("DMA_WR_BYTES"), await drv.tp_read("DMA_RD_BYTES")
        if dma_wr != w_bytes + a_bytes or lib.map.h2d_bytes + lib.wmap.h2d_bytes != dma_wr:
            errs.append(f"DMA bytes written {dma_wr}, map counted {lib.map.h2d_bytes + lib.wmap.h2d_bytes}; "
                        f"expected the weights once ({w_bytes}) + activations ({a_bytes})")
        if dma_rd != o_bytes:
            errs.append(f"DMA bytes read {dma_rd}, expected the results once ({o_bytes})")
        if lib.mode == "stream" and max(lib.q_max.values()) > lib.queue_depth:
            errs.append(f"a bounded queue held {lib.q_max} > {lib.queue_depth}")
        if lib.mode == "lockstep" and len(lib.periods) != len(tasks) + 2:
            errs.append(f"lock-step ran {len(lib.periods)} periods for {len(tasks)} tasks (n + S - 1 = "
                        f"{len(tasks) + 2})")
        # busy: the counter against the pins
        busy = await drv.reg("PERF_BUSY")
        pins = sum(e - s for s, e in lib.kbusy.get(0, []))
        n0 = sum(1 for e in lib.events if e.kind == "kernel" and e.resource == "kernel0")
        off = (busy - pins) & p.cnt_mask  # the counter keeps the count modulo 2**cnt_bits
        if min(off, p.cnt_mask + 1 - off) > n0:
            errs.append(f"PERF_BUSY {busy} vs {pins} busy cycles seen on k_busy[0] ({n0} tasks; modulo "
                        f"2**{p.cnt_bits}: {pins & p.cnt_mask})")
        total = c1 - c0
        kb = [busy_fraction(lib.events, f"kernel{k}", c0, c1) for k in range(p.n_kernels)]
        # steady state: from the 3rd kernel task's start to the end of the 3rd-last one
        ks = sorted((e for e in lib.events if e.kind == "kernel"), key=lambda e: e.start)
        steady = None
        if len(ks) >= 6:
            s0, s1 = ks[2].start, ks[-3].end
            steady = float(np.mean([busy_fraction(lib.events, f"kernel{k}", s0, s1) for k in range(p.n_kernels)]))
        ctx.summary.update(mode=lib.mode, tasks=len(tasks), cycles=total, busy=kb, busy_steady=steady,
                           busy_mean=float(np.mean(kb)), sq_wait=lib.sq_wait, perf_busy=busy,
                           weights_bytes=w_bytes, act_bytes=a_bytes, periods=lib.periods[:64],
                           mean={k: float(np.mean([e.end - e.start for e in lib.events if e.kind == k] or [0]))
                                 for k in ("pre", "dma_wr", "desc", "kernel", "dma_rd", "post")},
                           sq_full_waits=drv.full_waits)
        if ctx.opt("chart", False):
            timing_chart([e for e in lib.events if e.tag >= 0], str(ctx.results / "timing.png"),
                         f"{lib.mode}, {p.n_kernels} kernel(s)")
        cg = Covergroup("host.pipe")
        cg.point("mode", lambda x: x[0], ["serial", "lockstep", "stream"])
        cg.point("route", lambda x: x[1], ["accel", "both"])
        for t in tasks:
            cg.sample((lib.mode, t.route))
        self.cg, self.errs = cg, errs
        ctx.summary.update(blocks=len(res), mismatches=len(errs))
        self.drop_objection()

    def check_phase(self) -> None:
        self.ctx.summary.update(errors=self.errs[:20])
        self.ctx.finish(self.errs, self.logger)

    def report_phase(self) -> None:
        self.ctx.report_coverage(self.cg)
