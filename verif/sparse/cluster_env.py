"""Testbench knowledge of the sparse tensor compute cluster ``stc_cluster`` (docs/sparse.md
sections 6 and 9; behaviour in :mod:`lockstep.gen.sparse.cluster`).

The shared job environment (:mod:`.job_env`) runs the passes of a scenario
(:mod:`.cluster_jobs`, the ``scenario`` option) one after the other. For each pass
:meth:`ClusterUnit.drive` does what the host does: loads the broadcast weights (``w_*``
stream, or the FC matrix through ``fc_*``), loads each active memory unit's cell
(``wr_unit``, descriptor, data words) unless it was loaded into that bank during the
pass before, drives ``route_sel``/``cfg_active``/``cfg_bank``/``cfg_*``, pulses
``start`` (a second one while busy when the pass says so), writes the next pass's cells
into the other bank while this one runs, and waits for ``cluster_done``. The ``m``
output streams are taken with the pass's back-pressure (:class:`UnitSinks`).

:meth:`ClusterUnit.check` holds each pass to the golden model and to numpy:

* (a) every running unit's output words, bit-exact, against ``stu_job`` of the cell of
  the memory unit routed to it (``cluster_run``), and its counters and sticky ``err``;
* (b) the combined map, never computed from the hardware's own logic: the units'
  decoded outputs placed by the ORG fields of the descriptor the cluster reports per
  unit (``unit_desc``), overlap-added (``overlap_add``) against numpy's
  ``correlate_full`` of the whole map, or halo-stitched (``halo_stitch``) against the
  drained (ReLU, pool, shift, saturation) valid crop of it; independent maps and FC
  vectors against ``drain(correlate_full(X, Wk))`` and ``drain(W @ x)``;
* (c) ``cluster_done`` exactly ``max_u cycles(job_u, stalls_u)`` after ``start`` (the
  golden ``cluster_cycles`` without back-pressure), each unit's ``done`` at its own
  ``cycles``, ``cluster_cycles`` equal to it, ``busy`` high exactly in between, and the
  largest ``cyc_compute`` equal to the model's makespan;
* (d) routing: ``unit_active`` marks exactly the units ``route_sel`` feeds, and
  ``unit_desc`` is the descriptor loaded into the memory unit meant for each; two memory
  units on one unit refuse the pass (ROUTE, ``cluster_done`` in the next cycle, no unit
  starts), a start while busy raises START_BUSY, the memories' and the weight memory's
  sticky errors are the models' (``load_data``: DESC for a refused descriptor, whose
  unit then refuses with CFG);
* (e) flows (passes the host chains, :class:`~.cluster_jobs.Flow`): a channel pass with
  ``emit = 0`` emits nothing and leaves each unit's accumulator for the next (the golden
  ``cluster_run`` carries it); the last one's outputs, combined, equal
  ``sum_c correlate_full(X_c, Wk_c)`` (overlap-add) or the drain of its valid crop
  (halo). Depthwise-separable: each depthwise pass's combined output equals numpy's
  ``sat(correlate_full(X_c, Wd_c) >> shift_dw)``; the pointwise outputs, placed by the
  ORG of ``unit_desc``, cover every pixel once, and the assembled map equals both
  ``depthwise_separable`` and an independent numpy computation (and the depthwise maps
  the host collected equal the data the pointwise passes ran on);
* (f) loads: ``wr_done`` one cycle after each memory-unit load's last handshake and
  ``w_done`` after the weight stream's, never else; the ``defects`` scenario resets the
  cluster before every other pass, so each sticky flag a pass raises is seen alone;
* (g) inside the cluster (Icarus): each memory unit's read port in every busy cycle
  against the entries it stored (:class:`ReadPortProbe`), a boundary the STUs' own
  ``q`` guard hides from the outputs.

Every pass's measured counters go to ``summary.json`` (``perf``): ``make sparse-report``
reads them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, ReadOnly, ReadWrite, RisingEdge

from lockstep.models import sparse
from lockstep.models.sparse.params import SparseParams

from ..context import pulse_reset
from ..coverage import Covergroup
from ..packing import unpack_lanes
from .cluster_jobs import ClusterJob, Flow, make_jobs
from .job_env import JobBfm, JobTest, JobUnit, Observation, Pauses, handshakes

__all__ = ["ClusterTest", "ClusterUnit", "UnitSinks"]

#: The STU counters the cluster reports per unit (``cnt_bits`` each).
COUNTERS = SparseParams.COUNTERS
#: The cluster's own sticky error bits (gen/sparse/cluster.py CL_ERR_NAMES).
CL_ERR = {"ROUTE": 1, "START_BUSY": 2}


def _lanes(bus: int, width: int, n: int) -> list[int]:
    mask = (1 << width) - 1
    return [(bus >> (i * width)) & mask for i in range(n)]


#: A memory unit's read port inside the cluster (``fm_mem_unit<i>_<name>``), watched by
#: :class:`ReadPortProbe`.
READ_PORT = ("rd_group", "rd_lane_valid", "rd_row", "rd_col", "rd_val", "rd_q")


class ReadPortProbe:
    """A passive checker on the boundary between each memory unit and the STU it feeds,
    inside the cluster: the memory units' read ports (``rd_group`` in, the ``p`` lanes'
    valid bits, rows, columns and values out, ``rd_q``) sampled in every cycle of a pass
    (``busy``), to be held to the memory model (:func:`lockstep.models.sparse.load_data`'s
    stored entries): lane ``l`` of group ``g`` is valid exactly when entry ``g * p + l``
    is stored, and then reads it; an invalid lane reads 0 (docs/sparse.md section 7).
    The STU guards its lanes with ``q`` as well, so a wrong valid bit or a stale value in
    an invalid lane never reaches the cluster's outputs: only this check sees it.

    Internal signals: on Icarus, and only when the DUT has them (the generated cluster;
    ``RTL=`` another implementation, whose internals are its own, is not probed).
    """

    def __init__(self, dut: Any, m: int) -> None:
        self.dut, self.m = dut, m
        self.handles: list[tuple[Any, ...]] | None = None
        if "icarus" in cocotb.SIM_NAME.lower():
            try:
                self.handles = [tuple(getattr(dut, f"fm_mem_unit{i}_{n}") for n in READ_PORT) for i in range(m)]
                self.bank = dut.bank_eff
            except AttributeError:
                self.handles = None
        self.samples: list[tuple[int, list[tuple[int, ...]]]] = []
        self.task: Any = None

    def begin(self) -> None:
        """Sample every busy cycle from now until :meth:`end`."""
        if self.handles is not None:
            self.samples = []
            self.task = cocotb.start_soon(self._run())

    def end(self) -> list[tuple[int, list[tuple[int, ...]]]]:
        """Stop sampling; the samples: ``(bank, [per memory unit: (group, valid, row, col, val, q)])``."""
        if self.task is not None:
            self.task.cancel()
            self.task = None
        out, self.samples = self.samples, []
        return out

    async def _run(self) -> None:
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            if int(dut.busy.value):   # an X or Z reads as -1 (an error, never a value)
                self.samples.append((_int_or_x(self.bank.value), [tuple(_int_or_x(h.value) for h in hs)
                                                                  for hs in self.handles]))


def _int_or_x(v: Any) -> int:
    return int(v) if v.is_resolvable else -1


def read_port_errors(samples: list[tuple[int, list[tuple[int, ...]]]], bank: int,
                     stored: dict[int, list[tuple[int, int, int]]], p: SparseParams) -> list[str]:
    """The samples of :class:`ReadPortProbe` against the entries each memory unit stored
    in ``bank`` (``stored``: memory unit -> entries; units not in it are not checked)."""
    errs: list[str] = []
    rb, cb, dw = p.rb, p.cb, p.dw
    for k, (b, ports) in enumerate(samples):
        if b != bank:
            return [f"busy cycle {k}: the memory units read bank {b}, the pass's is {bank}"]
        for i, entries in stored.items():
            g, lv, rows, cols, vals, q = ports[i]
            if -1 in ports[i]:
                bad = [n for n, v in zip(READ_PORT, ports[i]) if v == -1]
                errs.append(f"busy cycle {k}: memory unit {i}: {', '.join(bad)} unknown (X or Z)")
                continue
            if q != len(entries):
                errs.append(f"busy cycle {k}: memory unit {i}: rd_q {q}, {len(entries)} entries stored")
            rr, cc = _lanes(rows, rb, p.p), _lanes(cols, cb, p.p)
            vv = unpack_lanes(vals, dw, p.p, signed=True).tolist()
            for lane in range(p.p):
                e = g * p.p + lane
                want = entries[e] if e < len(entries) else (0, 0, 0)
                if (lv >> lane & 1) != (e < len(entries)) or (rr[lane], cc[lane], vv[lane]) != tuple(want):
                    errs.append(f"busy cycle {k}: memory unit {i} group {g} lane {lane}: valid={lv >> lane & 1} "
                                f"{(rr[lane], cc[lane], vv[lane])}, expected valid={int(e < len(entries))} "
                                f"{tuple(want)} (entry {e} of {len(entries)})")
            if len(errs) >= 4:
                return errs
    return errs


class UnitSinks:
    """The ``m`` per-unit output streams (packed ``o_valid``/``o_ready``/``o_data``):
    ``o_ready`` bit ``u`` from unit ``u``'s own pause generator, the beats taken per unit,
    and the cycles in which a unit's ``o_data`` slice is not 0 while its ``o_valid`` bit
    is low (docs/sparse.md section 5: it must be 0).

    Args:
        dut: the cluster.
        m: units.
        width: one unit's ``o_data`` width.
        seed: seed of the pause generators.
    """

    def __init__(self, dut: Any, m: int, width: int, seed: int) -> None:
        self.dut, self.m, self.width = dut, m, width
        self.pauses = [Pauses(seed * 53 + u) for u in range(m)]
        self.beats: list[list[int]] = [[] for _ in range(m)]
        self.loud: list[tuple[int, int]] = []   # (unit, word) of the first violations since the last take
        self.n_loud = 0
        # per o_valid value: the o_data bits of the units whose valid bit is low
        self._idle = [sum(((1 << width) - 1) << (u * width) for u in range(m) if not v >> u & 1) for v in range(1 << m)]
        dut.o_ready.value = (1 << m) - 1
        self.task = cocotb.start_soon(self._run())

    def set_rate(self, bp: float) -> None:
        for pz in self.pauses:
            pz.rate = bp

    async def _run(self) -> None:
        dut, m, w = self.dut, self.m, self.width
        while True:
            await RisingEdge(dut.clk)
            rst = dut.rst.value
            if not rst.is_resolvable or int(rst):
                continue
            valid, data = int(dut.o_valid.value), dut.o_data.value
            data = int(data) if data.is_resolvable else -1   # X or Z bits: never quiet
            hs = valid & int(dut.o_ready.value)
            if hs:
                words = _lanes(data, w, m)
                for u in range(m):
                    if hs >> u & 1:
                        self.beats[u].append(words[u])
            if data & self._idle[valid]:
                self.n_loud += 1
                if len(self.loud) < 3:
                    u = next(u for u in range(m) if (data & self._idle[valid]) >> (u * w) & ((1 << w) - 1))
                    self.loud.append((u, _lanes(data, w, m)[u] if data >= 0 else -1))
            dut.o_ready.value = sum((0 if next(pz) else 1) << u for u, pz in enumerate(self.pauses))

    def take(self) -> list[list[int]]:
        """The words each unit emitted since the last call."""
        out, self.beats = self.beats, [[] for _ in range(self.m)]
        return out

    def take_loud(self) -> list[str]:
        """The quiet-output violations since the last call, as error messages."""
        out = [f"unit {u}'s o_data is {'X' if word < 0 else hex(word)} while its o_valid is low; it must be 0"
               for u, word in self.loud]
        if self.n_loud > len(self.loud):
            out.append(f"({self.n_loud} cycles with a unit's o_data not 0 while its o_valid is low)")
        self.loud, self.n_loud = [], 0
        return out


def _differs(got: np.ndarray, ref: np.ndarray, what: str) -> list[str]:
    """``[what (first difference)]`` when the maps differ, else ``[]``."""
    if got.shape == ref.shape and np.array_equal(got, ref):
        return []
    bad = np.argwhere(got != ref) if got.shape == ref.shape else None
    where = (f"first at {tuple(int(x) for x in bad[0])}" if bad is not None and len(bad)
             else f"shapes {got.shape}, {ref.shape}")
    return [f"{what} ({where})"]


class ClusterUnit(JobUnit):
    """``stc_cluster``: load, route, run, combine, check (module docstring)."""

    sources: ClassVar[dict[str, list[str]]] = {"wr_desc": ["data"], "wr": ["data"], "w": ["data"]}
    controls: ClassVar[list[str]] = ["start", "busy", "cluster_done", "unit_done", "unit_busy", "o_valid", "o_ready",
                                     "wr_done", "w_done"]
    idle_inputs: ClassVar[dict[str, int]] = {
        "wr_unit": 0, "wr_bank": 0, "wr_dense": 0, "w_cfg_k": 0, "w_cfg_dense": 0, "w_start": 0, "fc_we": 0,
        "fc_row": 0, "fc_col": 0, "fc_data": 0, "start": 0, "route_sel": 0, "cfg_active": 0, "cfg_bank": 0,
        "cfg_k": 0, "cfg_mode": 0, "cfg_n_out": 0, "cfg_emit": 0, "cfg_relu": 0, "cfg_pool": 0, "cfg_shift": 0,
        "cfg_dense": 0,
    }
    covergroup = "sparse.cluster"
    default_jobs = 24

    def __init__(self, ctx: Any, params: SparseParams) -> None:
        super().__init__(ctx, params)
        self.widths = {n: int(v["width"]) for n, v in ctx.record["ports"].items()}
        self.m = params.m
        self.idle_inputs = {**self.idle_inputs, "o_ready": (1 << self.m) - 1}  # taken by UnitSinks later
        self.unit_sinks: UnitSinks | None = None
        self.probe: ReadPortProbe | None = None
        self.sticky = 0
        self.unit_sticky = [0] * self.m
        self.mem_sticky = [0] * self.m
        self.w_sticky = 0
        self.perf: list[dict[str, Any]] = []
        self.flows: dict[tuple[str, int], dict[str, np.ndarray]] = {}  # what the host collected per flow

    # ---- stimulus -------------------------------------------------------------------
    def jobs(self, rng: np.random.Generator, count: int) -> list[ClusterJob]:
        return make_jobs(str(self.ctx.opt("scenario", "balance")), self.params, rng, count, self.widths)

    def budget(self, job: ClusterJob) -> int:
        load = sum(len(w) + 2 for w in job.words) + len(job.weights if job.w_words is None else job.w_words) + 8
        if job.cfg.mode == sparse.FC:
            load = sum(len(w) + 2 for w in job.words) + int(np.size(job.weights)) + 8
        load = int(load / (1 - job.idle))
        g = job.golden
        run = 2 if g is None else max((sparse.cycles(j) for j in g.units if j is not None), default=1)
        nnz = 0 if g is None else max((j.nnz_out for j in g.units if j is not None), default=0)
        stalls = int((nnz + 1) * 16 * job.bp / (1 - job.bp)) if job.bp else 0
        shadow = sum(len(w) + 2 for _, _, w in job.shadow) * 2
        return load + run + stalls + shadow + 16

    # ---- driving --------------------------------------------------------------------
    async def load_weights(self, bfm: JobBfm, job: ClusterJob) -> None:
        dut, p = bfm.dut, self.params
        if job.cfg.mode == sparse.FC:
            mask = (1 << p.ww) - 1
            for o, row in enumerate(np.asarray(job.weights)):
                for i, v in enumerate(row):
                    dut.fc_we.value, dut.fc_row.value, dut.fc_col.value, dut.fc_data.value = 1, o, i, int(v) & mask
                    await RisingEdge(dut.clk)
            dut.fc_we.value = 0
            return
        dut.w_cfg_k.value = job.cfg.k if job.w_k is None else job.w_k
        dut.w_cfg_dense.value = job.cfg.dense
        dut.w_start.value = 1
        await RisingEdge(dut.clk)
        dut.w_start.value = 0
        words = sparse.pack_weights(job.weights, p) if job.w_words is None else job.w_words
        await bfm.send("w", [{"data": w} for w in words])

    async def load_data(self, bfm: JobBfm, bank: int, dense: int, cells: list[tuple[int, int, list[int]]]) -> None:
        """Each ``(memory unit, descriptor, words)`` into ``bank``."""
        dut = bfm.dut
        for i, desc, words in cells:
            dut.wr_unit.value = i
            dut.wr_bank.value = bank
            dut.wr_dense.value = dense
            await bfm.send("wr_desc", [{"data": desc}])
            if words:
                await bfm.send("wr", [{"data": w} for w in words])

    def cfg(self, job: ClusterJob) -> dict[str, int]:
        c = job.cfg
        bits = lambda xs: sum(int(x) << i for i, x in enumerate(xs))  # noqa: E731
        return {"cfg_k": c.k, "cfg_mode": int(c.mode == sparse.FC), "cfg_n_out": c.n_out, "cfg_emit": c.emit,
                "cfg_relu": c.relu, "cfg_pool": SparseParams.POOL_MODES.index(c.pool_name), "cfg_shift": c.shift,
                "cfg_dense": c.dense, "route_sel": bits(job.route_sel),
                "cfg_active": bits(d is not None for d in job.descs), "cfg_bank": job.bank}

    async def drive(self, bfm: JobBfm, job: ClusterJob) -> tuple[int, int, dict[str, Any]]:
        dut = bfm.dut
        if self.unit_sinks is None:
            self.unit_sinks = UnitSinks(dut, self.m, self.widths["o_data"] // self.m, self.ctx.seed)
            self.probe = ReadPortProbe(dut, self.m)
        await RisingEdge(dut.clk)
        if job.reset:
            if job.keep_weights or job.preloaded:
                raise ValueError(f"cluster stimulus: a pass after a reset must load its weights and data ({job!r})")
            await pulse_reset(dut)
        loads_from = bfm.now
        bfm.set_rates(job.idle, 0.0)
        self.unit_sinks.set_rate(job.bp)
        if not job.keep_weights:
            await self.load_weights(bfm, job)
        if not job.preloaded:
            await self.load_data(bfm, job.bank, job.cfg.dense, [(i, job.descs[i], job.words[i]) for i in job.active])
        await RisingEdge(dut.clk)
        for name, value in self.cfg(job).items():
            getattr(dut, name).value = value
        first = bfm.now
        dut.start.value = 1
        self.probe.begin()
        await RisingEdge(dut.clk)
        dut.start.value = 0
        done = cocotb.start_soon(bfm.wait_high("cluster_done"))
        shadow = None
        if job.shadow:  # the next pass's cells into the other bank, while this one runs
            shadow = cocotb.start_soon(self.load_data(bfm, 1 - job.bank, job.shadow_dense, job.shadow))
        read: dict[str, Any] = {}
        if job.poke is not None:
            await ClockCycles(dut.clk, job.poke - 1)
            await ReadWrite()
            if not done.done():
                dut.start.value = 1
                read["poked"] = int(dut.busy.value)
                await RisingEdge(dut.clk)
                dut.start.value = 0
        last = await done
        read["read_port"] = self.probe.end()
        read.update({n: int(getattr(dut, n).value) for n in (
            "cluster_cycles", "err", "unit_active", "unit_desc", "unit_err", "w_err", "w_wnz", *COUNTERS)})
        if shadow is not None:
            await shadow
            await RisingEdge(dut.clk)
            await ReadOnly()
        read["mem_err"] = int(dut.mem_err.value)
        read["outputs"] = self.unit_sinks.take()
        read["loud"] = self.unit_sinks.take_loud()
        await RisingEdge(dut.clk)
        read["loads"] = bfm.trace.window(loads_from, bfm.now)
        return first, last, read

    # ---- checks ---------------------------------------------------------------------
    def _unit_reads(self, rd: dict[str, Any]) -> list[dict[str, int]]:
        m, w = self.m, self.widths
        cols = {n: _lanes(rd[n], w[n] // m, m) for n in (*COUNTERS, "unit_desc", "unit_err")}
        return [{n: cols[n][u] for n in cols} for u in range(m)]

    def check(self, job: ClusterJob, obs: Observation) -> list[str]:
        p, m, tr, rd = self.params, self.m, obs.trace, obs.read
        d = len(tr["cluster_done"]) - 1
        if job.reset:
            self.sticky, self.w_sticky, self.mem_sticky, self.unit_sticky = 0, 0, [0] * m, [0] * m
        errs = self._check_load_pulses(job, rd["loads"]) + rd["loud"]
        for i, load in enumerate(job.loads):
            if load is not None:
                self.mem_sticky[i] |= load.err
        for i, desc, words in job.shadow:
            self.mem_sticky[i] |= sparse.load_data(desc, words, p, dense=bool(job.shadow_dense)).err
        if job.poke is not None:
            if not rd.get("poked"):
                errs.append("the second start did not come while busy (stimulus)")
            self.sticky |= CL_ERR["START_BUSY"]
        units = self._unit_reads(rd)
        outs = rd["outputs"]
        if job.refused:
            self.sticky |= CL_ERR["ROUTE"]
            if d != 1 or rd["cluster_cycles"] != 1:
                errs.append(f"refused pass: cluster_done at +{d}, cluster_cycles {rd['cluster_cycles']} (expected 1)")
            if tr["unit_done"].any() or tr["unit_busy"].any() or rd["unit_active"] or rd["unit_desc"] or any(outs):
                errs.append("refused pass: a unit started, finished, emitted or reports a descriptor")
            if tr["busy"].any():
                errs.append("refused pass: busy went high")
        else:
            errs += self._check_pass(job, obs, units, outs, d)
        if rd["err"] != self.sticky:
            errs.append(f"err = {rd['err']:#x}, expected {self.sticky:#x} (bit 0 ROUTE, bit 1 START_BUSY)")
        mem = _lanes(rd["mem_err"], self.widths["mem_err"] // m, m)
        if mem != self.mem_sticky:
            errs.append(f"mem_err per memory unit {mem}, load_data says {self.mem_sticky}")
        if not job.keep_weights:
            self.w_sticky |= job.w_err
            if job.cfg.mode != sparse.FC and rd["w_wnz"] != len(job.weights):
                errs.append(f"w_wnz = {rd['w_wnz']}, the weight memory should hold {len(job.weights)} weights")
        if rd["w_err"] != self.w_sticky:
            errs.append(f"w_err = {rd['w_err']:#x}, load_weights says {self.w_sticky:#x}")
        return errs

    def _check_load_pulses(self, job: ClusterJob, tr: dict[str, np.ndarray]) -> list[str]:
        """``wr_done`` pulses once per memory-unit load, one cycle after its last handshake
        (its descriptor's when it has no data words), ``w_done`` once one cycle after the
        weight stream's last; neither ever else (from the pass's loads to its end)."""
        cells = [] if job.preloaded else [job.words[i] for i in job.active]
        cells += [words for _, _, words in job.shadow]
        dh, wh = handshakes(tr, "wr_desc"), handshakes(tr, "wr")
        if len(dh) != len(cells) or len(wh) != sum(map(len, cells)):
            return [f"loads: {len(dh)} descriptor and {len(wh)} data handshakes, expected {len(cells)} and "
                    f"{sum(map(len, cells))}"]
        ends, k = [], 0
        for t0, words in zip(dh, cells):
            k += len(words)
            ends.append(int(wh[k - 1]) if words else int(t0))
        errs = []
        got = np.flatnonzero(tr["wr_done"]).tolist()
        if got != [e + 1 for e in ends]:
            errs.append(f"wr_done at {got} (samples from the first load), expected one cycle after each load's last "
                        f"handshake: {[e + 1 for e in ends]}")
        conv_load = not job.keep_weights and job.cfg.mode != sparse.FC
        w = handshakes(tr, "w")
        want_w = [int(w[-1]) + 1] if conv_load and len(w) else []
        if np.flatnonzero(tr["w_done"]).tolist() != want_w:
            errs.append(f"w_done at {np.flatnonzero(tr['w_done']).tolist()}, expected {want_w} (one cycle after the "
                        "weight stream's last handshake)")
        return errs

    def _check_pass(self, job: ClusterJob, obs: Observation, units: list[dict[str, int]], outs: list[list[int]],
                    d: int) -> list[str]:
        p, m, tr, rd, g = self.params, self.m, obs.trace, obs.read, job.golden
        errs: list[str] = []
        want_active = sum(1 << u for u in range(m) if g.units[u] is not None)
        if rd["unit_active"] != want_active:
            errs.append(f"unit_active = {rd['unit_active']:0{m}b}, route_sel gives {want_active:0{m}b}")
        stored = {g.source[u]: list(job.loads[g.source[u]].entries) for u in range(m) if g.units[u] is not None}
        errs += read_port_errors(rd["read_port"], job.bank, stored, p)
        cyc = {}
        for u in range(m):
            gu = g.units[u]
            done_at = np.flatnonzero(tr["unit_done"] >> u & 1)
            busy_u = tr["unit_busy"] >> u & 1
            if gu is None:
                if len(done_at) or outs[u] or busy_u.any():
                    errs.append(f"unit {u} has no memory unit routed to it but finished, emitted or went busy")
                continue
            src = g.source[u]
            if units[u]["unit_desc"] != job.descs[src]:
                errs.append(f"unit {u}: unit_desc {units[u]['unit_desc']:#x} is not memory unit {src}'s descriptor "
                            f"{job.descs[src]:#x}")
            stalls = int(np.sum((tr["o_valid"] >> u & 1) & (1 - (tr["o_ready"] >> u & 1))))
            cyc[u] = sparse.cycles(gu, stalls)
            if list(busy_u) != [0] + [1] * (cyc[u] - 1) + [0] * (len(busy_u) - cyc[u]):
                errs.append(f"unit {u}: unit_busy high at {np.flatnonzero(busy_u).tolist()[:6]}..., expected exactly "
                            f"from +1 to +{cyc[u] - 1} (done at +{cyc[u]})")
            if list(done_at) != [cyc[u]]:
                errs.append(f"unit {u} (memory unit {src}): done at {list(done_at)}, the cycle model says "
                            f"+{cyc[u]} (cyc_compute {gu.cyc_compute}, cyc_drain {gu.cyc_drain}, stalls {stalls})")
            want = sparse.pack_out(gu.out_entries, p)
            if outs[u] != want:
                k = next((i for i, (a, b) in enumerate(zip(outs[u], want)) if a != b), min(len(outs[u]), len(want)))
                errs.append(f"unit {u} (memory unit {src}): {len(outs[u])} output words, stu_job {len(want)}; first "
                            f"difference at word {k}")
            for n, exp in sparse.counter_reads(gu, p, stalls).items():
                if units[u][n] != exp:
                    errs.append(f"unit {u}: {n} = {units[u][n]}, golden {exp} (mod 2**{p.cnt_bits})")
            self.unit_sticky[u] |= gu.errors
        got_err = [units[u]["unit_err"] for u in range(m)]
        if got_err != self.unit_sticky:
            errs.append(f"unit_err {got_err}, expected {self.unit_sticky}")
        want_d = max(cyc.values(), default=1)
        if d != want_d or rd["cluster_cycles"] != want_d & p.cnt_mask:
            errs.append(f"cluster_done at +{d}, cluster_cycles {rd['cluster_cycles']}: max over the units is {want_d} "
                        f"(the counter reads it mod 2**{p.cnt_bits})")
        if not job.bp and want_d != g.cluster_cycles:
            errs.append(f"the golden cluster_cycles {g.cluster_cycles} differs from max over units {want_d}")
        if tr["cluster_done"][:d].any() or not tr["busy"][1:d].all() or tr["busy"][0] or tr["busy"][d]:
            errs.append(f"busy not high exactly from +1 to +{d - 1} (or cluster_done early)")
        # the makespan: the largest unit's cyc_compute (each already checked mod 2**cnt_bits
        # against its job), read at the unit the model's makespan names
        top = max(cyc, key=lambda u: g.units[u].cyc_compute, default=None)
        ms = 0 if top is None else units[top]["cyc_compute"]
        if ms != g.makespan & p.cnt_mask:
            errs.append(f"makespan (largest cyc_compute, unit {top}) {ms}, model {g.makespan} "
                        f"(mod 2**{p.cnt_bits})")
        errs += self._check_combined(job, units, outs)
        self._record(job, units, cyc, d, ms)
        return errs

    def _map(self, words: list[int], shape: tuple[int, int]) -> np.ndarray:
        out = np.zeros(shape, dtype=np.int64)
        for r, c, v, _ in sparse.unpack_out(words, self.params):
            if r >= shape[0] or c >= shape[1]:
                raise ValueError(f"output entry ({r}, {c}) outside {shape}")
            out[r, c] = v
        return out

    def _check_combined(self, job: ClusterJob, units: list[dict[str, int]], outs: list[list[int]]) -> list[str]:
        """(b): the units' outputs combined, against numpy on the whole map."""
        p, g, c = self.params, job.golden, job.cfg
        run = [u for u in range(self.m) if g.units[u] is not None]
        if job.bad or job.corrupt or job.w_words is not None:
            return []  # a unit refused its cell, or a memory dropped words: checked per unit only
        if job.kind == "channels" and not c.emit:
            return []  # a keeping pass: no output (checked per unit), the sums stay in the units
        try:
            if job.kind in ("maps", "fc", "pw"):
                for u in run:
                    if g.units[u].errors & sparse.STU_ERR["CFG"]:
                        continue  # a refused FC pass (pooling, a vector of two rows): checked per unit
                    M = job.maps[g.source[u]]
                    if job.kind != "maps":
                        full = (np.asarray(job.weights, dtype=np.int64) @ M[0])[None, :]
                    else:
                        full = sparse.correlate_full(M, job.Wk)
                    ref = sparse.drain(full, c, p)
                    if not np.array_equal(self._map(outs[u], ref.shape), ref):
                        return [f"unit {u}: the output differs from numpy's drain of its map's "
                                f"{'correlate_full' if job.kind == 'maps' else 'W @ x'}"]
                return self._pointwise(job, units, outs, run) if job.kind == "pw" else []
            K = job.Wk.shape[0]
            descs = [sparse.unpack_desc(units[u]["unit_desc"]) for u in run]
            if job.kind == "channels":  # the last pass: every channel's sum
                full = sum(sparse.correlate_full(Xc, Wc) for Xc, Wc in zip(job.flow.X, job.flow.Wk))
            else:
                full = sparse.correlate_full(job.X, job.Wk)
            if job.kind in ("overlap", "dw") or (job.kind == "channels" and job.flow.mode == "overlap"):
                cells = [(d.org_row, d.org_row + d.h, d.org_col, d.org_col + d.w) for d in descs]
                maps = [self._map(outs[u], (d.h + K - 1, d.w + K - 1)) for u, d in zip(run, descs)]
                got = sparse.overlap_add(cells, maps, job.X.shape, K)
                # depthwise: Z_c = sat(full >> shift_dw); partitioned passes have no shift and
                # values that fit dw bits, so their partial sums add up to it exactly
                ref = sparse.drain(full, c, p) if job.kind == "dw" else full
                if job.kind == "dw":
                    self._collected(job.flow)["Z"][job.step] = got
            else:
                pooled = c.pool_name != "none"
                f = 2 if pooled else 1
                by_org = {(cl[0], cl[2]): cl for cl in job.cells if cl is not None}
                cells = [by_org[(d.org_row, d.org_col)] for d in descs]
                maps = [self._map(outs[u], ((d.h + K - 1) // f, (d.w + K - 1) // f)) for u, d in zip(run, descs)]
                got = sparse.halo_stitch(cells, maps, job.X.shape, K, pooled=pooled)
                ref = sparse.drain(sparse.valid(full, K), c, p)
        except (ValueError, KeyError) as exc:
            return [f"combining the units' outputs failed: {exc!r}"]
        return _differs(got, ref, f"{job.kind}: the combined map differs from numpy's whole-map reference")

    def _collected(self, flow: Flow) -> dict[str, np.ndarray]:
        """What the host collected from a depthwise-separable flow's passes so far."""
        key = (flow.kind, flow.id)
        if key not in self.flows:
            N, Ho, Wo = flow.Y.shape
            self.flows[key] = {"Z": np.zeros((flow.C, Ho, Wo), dtype=np.int64),
                               "Y": np.zeros((N, Ho, Wo), dtype=np.int64), "seen": np.zeros((Ho, Wo), dtype=np.int64)}
        return self.flows[key]

    def _pointwise(self, job: ClusterJob, units: list[dict[str, int]], outs: list[list[int]],
                   run: list[int]) -> list[str]:
        """(e): place each unit's pointwise output at the pixel its descriptor names; after
        the flow's last pass, the assembled map against the model and numpy."""
        flow, p = job.flow, self.params
        got = self._collected(flow)
        N, Ho, Wo = flow.Y.shape
        for u in run:
            d = sparse.unpack_desc(units[u]["unit_desc"])
            if not (d.org_row < Ho and d.org_col < Wo):
                return [f"unit {u}: pointwise descriptor ORG ({d.org_row}, {d.org_col}) outside {Ho} x {Wo}"]
            got["Y"][:, d.org_row, d.org_col] = self._map(outs[u], (1, N))[0]
            got["seen"][d.org_row, d.org_col] += 1
        if not job.last:
            return []
        errs = []
        if not (got["seen"] == 1).all():
            errs.append(f"dwsep: the pointwise passes covered pixels {np.argwhere(got['seen'] != 1)[:4].tolist()}... "
                        "not exactly once")
        if not np.array_equal(got["Z"], flow.Z):
            errs.append("dwsep: the depthwise maps the host collected differ from the pointwise passes' data")
        # independent numpy: depthwise correlation, requantise, 1x1 combination, ReLU, shift
        lo, hi = sparse.signed_range(p.ow)
        Z = np.stack([np.clip(sparse.correlate_full(Xc, Wc) >> flow.shift_dw, lo, hi)
                      for Xc, Wc in zip(flow.X, flow.Wk)])
        Y = np.clip(np.maximum(np.einsum("nc,chw->nhw", flow.Wp, Z), 0) >> flow.shift_pw, lo, hi)
        errs += _differs(got["Y"], flow.Y, "dwsep: the assembled output differs from depthwise_separable")
        errs += _differs(got["Y"], Y, "dwsep: the assembled output differs from numpy's depthwise-separable")
        del self.flows[(flow.kind, flow.id)]
        return errs

    def _record(self, job: ClusterJob, units: list[dict[str, int]], cyc: dict[int, int], d: int, ms: int) -> None:
        g = job.golden
        rows = []
        for u, gu in enumerate(g.units):
            if gu is None:
                continue
            cu = gu.cfg
            rows.append({"unit": u, "src": g.source[u], "q": len(job.loads[g.source[u]].entries), "hw": cu.h * cu.w,
                         "wnz": len(job.weights) if cu.mode != sparse.FC else None, "k": cu.k, "dense": cu.dense,
                         "cyc_compute": units[u]["cyc_compute"], "cycles": cyc[u],
                         "cyc_compute_model": gu.cyc_compute})
        self.perf.append({"kind": job.kind, "part": job.part, "tag": job.tag, "bp": job.bp, "emit": job.cfg.emit,
                          "units": rows,
                          "makespan": ms, "makespan_model": g.makespan, "cluster_cycles": d,
                          "cluster_cycles_model": g.cluster_cycles,
                          "loads": [len(x.entries) for x in job.loads if x is not None]})

    # ---- coverage -------------------------------------------------------------------
    def define_coverage(self, cg: Covergroup) -> None:
        cg.point("kind", lambda s: s["kind"], ["overlap", "halo", "maps", "fc", "refused"])
        cg.point("partition", lambda s: s["part"], ["balanced", "equal"])
        cg.point("route", lambda s: s["route"], ["identity", "rotation", "mixed"] if self.m > 1 else ["identity"])
        cg.point("active", lambda s: s["active"], ["all", "some"])
        cg.point("bank", lambda s: s["bank"], [0, 1])
        cg.point("backpressure", lambda s: s["bp"], [False, True])
        cg.point("ping_pong", lambda s: s["pp"], [False, True])
        cg.point("start_busy", lambda s: s["poke"], [False, True])
        cg.point("unit_refused", lambda s: s["bad"], [False, True])
        cg.point("load_defect", lambda s: s["defect"], ["none", "data", "weights", "both"])
        cg.point("pool", lambda s: s["pool"], list(SparseParams.POOL_MODES))
        # the pooling modes that see values of both signs (no ReLU before them; sum pooling
        # runs with ReLU): max pooling's signed compare
        cg.point("pool_signed", lambda s: s["pool_signed"], [m for m in SparseParams.POOL_MODES if m != "sum"])
        # flows: channel sequences and depthwise-separable convolutions
        cg.point("channels", lambda s: s["channels"], [2, 3, 4])
        cg.point("channel_pass", lambda s: s["channel_pass"], ["keep", "drain"])
        cg.point("channel_empty_cell", lambda s: s["channel_empty"], ["keep", "drain"])
        cg.point("channel_combine", lambda s: s["channel_combine"], ["overlap", "halo"])
        cg.point("dwsep_pass", lambda s: s["dwsep_pass"], ["depthwise", "pointwise"])
        cg.point("dwsep_depthwise", lambda s: s["dwsep_depthwise"], ["partitioned", "whole"])
        cg.point("dwsep_zero_vector", lambda s: s["dwsep_zero_vector"], [False, True])

    def sample(self, job: ClusterJob, obs: Observation) -> dict[str, Any]:
        m = self.m
        sel = job.route_sel
        route = "identity" if not any(sel) else "rotation" if all(sel) else "mixed"
        chan = job.kind == "channels"
        return {
            "kind": "refused" if job.refused else job.kind,
            "part": job.part if job.part in ("balanced", "equal") else None,
            "route": route,
            "active": "all" if len(job.active) == m else "some",
            "bank": job.bank,
            "bp": bool(np.any(obs.trace["o_valid"] & ~obs.trace["o_ready"])),
            "pp": bool(job.shadow or job.preloaded),
            "poke": job.poke is not None,
            "bad": bool(job.bad),
            "defect": ("both" if job.corrupt else "weights") if job.w_words is not None
            else "data" if job.corrupt else "none",
            "pool": job.cfg.pool_name if job.kind == "halo" or (chan and job.flow.mode == "halo" and job.last)
            else None,
            "pool_signed": job.cfg.pool_name if job.kind == "halo" and not job.cfg.relu else None,
            "channels": job.flow.C if chan and job.last else None,
            "channel_pass": ("drain" if job.cfg.emit else "keep") if chan else None,
            "channel_empty": ("drain" if job.cfg.emit else "keep") if chan and job.empty else None,
            "channel_combine": job.flow.mode if chan and job.last else None,
            "dwsep_pass": {"dw": "depthwise", "pw": "pointwise"}.get(job.kind),
            "dwsep_depthwise": job.flow.mode if job.kind == "dw" else None,
            "dwsep_zero_vector": any(not job.loads[i].entries for i in job.active) if job.kind == "pw" else None,
        }


class ClusterTest(JobTest):
    """Every pass of the scenario against the golden model; also reports the measured
    counters of every pass (``perf``)."""

    UNIT = ClusterUnit

    def report_phase(self) -> None:
        super().report_phase()
        self.ctx.summary["perf"] = self.unit.perf
        self.ctx.write_summary()
