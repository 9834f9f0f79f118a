"""Testbench knowledge of the sparse tensor compute unit, run on ``stu_top`` (the STU with
register-array memories and a load port; docs/sparse.md sections 4, 5, 7, 8 and 9).

The shared job environment (:mod:`.job_env`) runs the jobs of a scenario
(:mod:`.stu_jobs`, the ``scenario`` option) one after the other. For each job
:meth:`StuUnit.drive` loads the data entries, the weights (or the FC matrix) through the
load port, drives ``cfg_*``, pulses ``start`` and waits for ``done`` (pulsing a second
``start`` while busy, or ``rst`` in the middle, when the job says so), while a tap
monitor samples ``acc_we``/``acc_addr`` (and ``fifo_occ``) in every cycle of the job.
The output stream is taken by a sink with the job's back-pressure rate: Python's
random pauses, or with the option ``pauses=cycle`` the throughput harness's per-job
generator (:class:`JobPauses`, :mod:`lockstep.gen.sparse.harness`), so both modes of one
seed run the identical stream.

:meth:`StuUnit.check` holds each job to the golden model (``stu_job``, chained through
the accumulator):

* the output words, bit-exact: ``pack_out`` of the golden entries, LAST on the last;
* ``start`` to ``done`` exactly ``cycles(job, stalls)``, with ``stalls`` the cycles the
  trace shows ``o_valid`` high and ``o_ready`` low; ``busy`` high exactly in between;
  a start refused by CFG gives ``done`` in the next cycle and nothing else;
* ``cyc_compute``, ``n_rounds``, ``n_mults``, ``n_deferred``, ``nnz_out`` equal to the
  model's, ``cyc_drain`` to the model's plus the stalls;
* the sticky ``err``: the OR of the jobs' golden bits, START_BUSY after a start while
  busy, all clear after a reset;
* ``o_data`` is 0 in every cycle ``o_valid`` is low (docs/sparse.md section 5);
* invariants in every cycle: the lanes adding to the accumulator use distinct addresses
  (the round's translation for u = 1, the arbiter for u = 2), the collision FIFO never
  holds more than ``fifo_d`` items;
* directed jobs also against numbers worked out by hand (Fig. 18/19/20: entries, rounds,
  the lanes of every round, cycles), and every single-channel CONV job's output also
  against numpy (``drain(correlate_full(X, Wk, k=K))``), independently of the schedule.
"""

from __future__ import annotations

from typing import Any, ClassVar

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, ReadOnly, ReadWrite, RisingEdge

from lockstep.models import sparse
from lockstep.models.sparse.params import SparseParams

from ..agents.timed import LoadPort
from ..coverage import Covergroup
from ..twin import pause_threshold, xs32
from .job_env import JobBfm, JobTest, JobUnit, Observation
from .raster_env import DENSITY_BINS, density_bin
from .stu_jobs import StuJob, make_jobs

__all__ = ["JobPauses", "StuTest", "StuUnit", "job_pause_seed", "load_words"]

#: ``ld_sel`` codes of ``stu_top``'s load port (gen/sparse/stu_top.py).
LD_DATA, LD_WEIGHTS, LD_FC = 0, 1, 2
#: Jobs whose cycles the summary's ``perf`` keeps (the first ones; a long run keeps no more).
PERF_KEPT = 64
#: The STU's counters (:func:`~lockstep.models.sparse.counter_reads` gives what each reads).
COUNTERS = SparseParams.COUNTERS


def load_words(job: StuJob, p: SparseParams) -> list[tuple[int, int, int]]:
    """``(ld_sel, ld_addr, ld_data)`` of every load-port write of a job, in the per-edge
    order (:meth:`StuUnit.load` writes them; the throughput harness reads them from a file): the packed data entries from 0, then the packed
    weights from 0 and, past them, a copy of the last (a weight read beyond ``cfg_wnz``
    would count twice), or the FC matrix row by row at ``o * wmax`` (values masked to
    ``ww`` bits); nothing for a start the STU refuses."""
    if job.refused:
        return []
    words = [(LD_DATA, a, w) for a, w in enumerate(sparse.pack_data(job.data, p))]
    if job.cfg.mode == sparse.FC:
        mask = (1 << p.ww) - 1
        for o, row in enumerate(np.asarray(job.weights)):
            words += [(LD_FC, o * p.wmax + i, int(v) & mask) for i, v in enumerate(row)]
    else:
        packed = sparse.pack_weights(job.weights, p)
        words += [(LD_WEIGHTS, a, w) for a, w in enumerate(packed)]
        if 0 < len(packed) < p.kmax * p.kmax:   # poison: a copy of the last weight just past cfg_wnz,
            words.append((LD_WEIGHTS, len(packed), packed[-1]))   # which the STU must never read
    return words


class TapMonitor:
    """Samples ``acc_we``, ``acc_addr`` (and ``fifo_occ`` when the DUT has it) in every
    cycle from the current one until :meth:`stop` (read-only phase; exact Python ints)."""

    def __init__(self, dut: Any) -> None:
        self.dut = dut
        self.names = ["acc_we", "acc_addr"] + (["fifo_occ"] if hasattr(dut, "fifo_occ") else [])
        self.rows: list[tuple[int, ...]] = []
        self.running = True
        self.task = cocotb.start_soon(self._run())

    async def _run(self) -> None:
        await ReadOnly()
        while self.running:
            self.rows.append(tuple(int(getattr(self.dut, n).value) for n in self.names))
            await RisingEdge(self.dut.clk)
            await ReadOnly()

    def stop(self) -> list[tuple[int, ...]]:
        self.running = False
        return self.rows


def job_pause_seed(seed: int, episode: int) -> int:
    """The back-pressure generator seed of job ``episode`` of a run with ``seed`` (nonzero
    32-bit; the throughput harness reads it from the job's settings file)."""
    return ((seed * 2654435761 + episode * 2246822519 + 3) & 0xFFFFFFFF) or 3


class JobPauses:
    """One job's output back-pressure as the throughput harness makes it: cycle ``k``
    (``k = 1, 2, ...`` after the start cycle 0) has ``o_ready`` low when
    ``xs32^(k-1)(seed) >> 16 < round(bp * 65536)``; cycle 0 and earlier never pause.

    The per-edge sink calls ``next()`` on each edge to set ``o_ready`` for the cycle that
    edge opens; the cycle is counted from the BFM's trace samples (fixed in the edge's
    time step, whatever order the coroutines woken by the edge run in).

    Args:
        bfm: the job BFM (its ``now`` is the trace sample of the current cycle).
        seed: the job's generator seed (:func:`job_pause_seed`).
        bp: the job's back-pressure rate.
    """

    def __init__(self, bfm: JobBfm, seed: int, bp: float) -> None:
        self.bfm, self.first = bfm, bfm.now
        self.thr = pause_threshold(bp)
        self.state, self.at = seed, 1

    def __iter__(self) -> "JobPauses":
        return self

    def __next__(self) -> bool:
        k = self.bfm.now - self.first
        if k < 1:
            return False
        while self.at < k:
            self.state, self.at = xs32(self.state), self.at + 1
        return (self.state >> 16) < self.thr


class StuUnit(JobUnit):
    """``stu_top``: load, start, drain, check (module docstring)."""

    sinks: ClassVar[dict[str, list[str]]] = {"o": ["data"]}
    controls: ClassVar[list[str]] = ["start", "busy", "done", "o_data"]   # o_data: quiet while o_valid is low
    idle_inputs: ClassVar[dict[str, int]] = {
        "start": 0, "cfg_k": 0, "cfg_h": 0, "cfg_w": 0, "cfg_nnz": 0, "cfg_wnz": 0, "cfg_mode": 0, "cfg_n_out": 0,
        "cfg_emit": 0, "cfg_relu": 0, "cfg_pool": 0, "cfg_shift": 0, "cfg_dense": 0,
        "ld_we": 0, "ld_sel": 0, "ld_addr": 0, "ld_data": 0,
    }
    covergroup = "sparse.stu"
    default_jobs = 24

    def __init__(self, ctx: Any, params: SparseParams) -> None:
        super().__init__(ctx, params)
        self.widths = {n: int(v["width"]) for n, v in ctx.record["ports"].items()}
        self.ab = self.widths["acc_addr"] // self.widths["acc_we"]  # one lane's address bits
        self.sticky = 0
        self.perf: list[dict[str, Any]] = []
        self.rounds: Covergroup | None = None
        self.episode = 0  # jobs driven (the per-job pause seed)
        if "fifo_occ" in self.widths:  # u = 2: collisions per round and FIFO occupancy
            self.rounds = Covergroup("sparse.stu.round")
            two = ["0", "1"] + (["2+"] if params.p >= 4 else [])  # p = 3 never defers two items in one round
            self.rounds.point("deferred", lambda s: s["deferred"], two)
            self.rounds.point("fifo_occ", lambda s: s["occ"], two)

    # ---- stimulus -------------------------------------------------------------------
    def jobs(self, rng: np.random.Generator, count: int) -> list[StuJob]:
        return make_jobs(str(self.ctx.opt("scenario", "random")), self.params, rng, count, self.widths)

    def budget(self, job: StuJob) -> int:
        g = job.golden
        load = len(job.data) + (np.size(job.weights) if job.cfg.mode == sparse.FC else len(job.weights) + 1)
        stalls = int((g.nnz_out + 1) * 16 * job.bp / (1 - job.bp)) if job.bp else 0
        return load + sparse.cycles(g) + stalls + 8

    async def load(self, dut: Any, job: StuJob) -> None:
        """The job's data entries, weights or FC matrix through the load port (nothing
        for a start the STU refuses)."""
        port = LoadPort(dut)
        for sel, addr, data in load_words(job, self.params):
            await port.write(sel, [data], base=addr)

    def cfg(self, job: StuJob) -> dict[str, int]:
        """The ``cfg_*`` values of a job (every value fits its port: the job generator
        checks the record's widths)."""
        c = job.cfg
        return {"cfg_k": c.k, "cfg_h": c.h, "cfg_w": c.w, "cfg_nnz": c.nnz, "cfg_wnz": c.wnz,
                "cfg_mode": int(c.mode == sparse.FC), "cfg_n_out": c.n_out, "cfg_emit": c.emit,
                "cfg_relu": c.relu, "cfg_pool": SparseParams.POOL_MODES.index(c.pool_name),
                "cfg_shift": c.shift, "cfg_dense": c.dense}

    async def drive(self, bfm: JobBfm, job: StuJob) -> tuple[int, int, dict[str, Any]]:
        dut = bfm.dut
        await RisingEdge(dut.clk)
        await self.load(dut, job)
        bfm.set_rates(0.0, job.bp)
        if self.ctx.opt("pauses", "random") == "cycle":  # the throughput harness's generator, cycle for cycle
            bfm.sinks["o"].pauses = JobPauses(bfm, job_pause_seed(self.ctx.seed, self.episode), job.bp)
        self.episode += 1
        for name, value in self.cfg(job).items():
            getattr(dut, name).value = value
        first = bfm.now
        dut.start.value = 1
        taps = TapMonitor(dut)
        await RisingEdge(dut.clk)
        dut.start.value = 0
        read: dict[str, Any] = {}
        if job.reset_at is not None:
            await ClockCycles(dut.clk, job.reset_at - 1)
            dut.rst.value = 1
            await ClockCycles(dut.clk, 2)
            dut.rst.value = 0
            await ReadOnly()
            last = bfm.now
            read["after_reset"] = {n: int(getattr(dut, n).value) for n in ("err", "busy", *COUNTERS)}
        else:
            done = cocotb.start_soon(bfm.wait_high("done"))
            if job.poke is not None:
                await ClockCycles(dut.clk, job.poke - 1)
                await ReadWrite()
                if not done.done():
                    dut.start.value = 1  # while busy: refused, START_BUSY
                    read["poked"] = int(dut.busy.value)
                    await RisingEdge(dut.clk)
                    dut.start.value = 0
            last = await done
            read.update({n: int(getattr(dut, n).value) for n in ("err", *COUNTERS)})
        read["taps"] = taps.stop()
        return first, last, read

    # ---- checks ---------------------------------------------------------------------
    def check(self, job: StuJob, obs: Observation) -> list[str]:
        p, g, tr, rd = self.params, job.golden, obs.trace, obs.read
        d = len(tr["done"]) - 1
        if job.reset_at is not None:  # cut by rst: idle, accumulator, counters and err cleared
            self.sticky = 0
            bad = {n: v for n, v in rd["after_reset"].items() if v}
            return [f"after a reset in the job: {bad} (expected all 0)"] if bad else []
        errs: list[str] = []
        stalls = int(np.sum(tr["o_valid"] & (1 - tr["o_ready"])))
        want = sparse.cycles(g, stalls)
        if d != want:
            errs.append(f"start to done took {d} cycles, the cycle model says {want} "
                        f"(cyc_compute {g.cyc_compute}, cyc_drain {g.cyc_drain}, stalls {stalls})")
        if tr["done"][:d].any():
            errs.append(f"done pulsed early, at +{int(np.flatnonzero(tr['done'][:d])[0])}")
        if job.refused:
            if tr["busy"].any():
                errs.append("refused start: busy went high")
        elif not tr["busy"][1:d].all() or tr["busy"][d] or tr["busy"][0]:
            errs.append(f"busy not high exactly from +1 to +{d - 1}")
        errs += self._check_words(job, obs)
        loud = np.flatnonzero((tr["o_valid"] == 0) & (tr["o_data"] != 0))
        if loud.size:   # docs/sparse.md section 5
            errs.append(f"o_data is {int(tr['o_data'][loud[0]]):#x} at +{int(loud[0])} while o_valid is low "
                        f"(in {loud.size} cycles of the job); it must be 0")
        for n, exp in sparse.counter_reads(g, p, stalls).items():
            if rd[n] != exp:
                errs.append(f"{n} = {rd[n]}, golden {exp} (mod 2**{p.cnt_bits})")
        self.sticky |= g.errors
        if job.poke is not None:
            if not rd.get("poked"):
                errs.append("the second start did not come while busy (stimulus)")
            self.sticky |= sparse.STU_ERR["START_BUSY"]
        if rd["err"] != self.sticky:
            errs.append(f"err = {sparse.err_names(rd['err'], p.STU_ERR_NAMES)}, expected "
                        f"{sparse.err_names(self.sticky, p.STU_ERR_NAMES)}")
        errs += self._check_taps(job, rd["taps"])
        errs += self._check_hand(job, obs)
        if len(self.perf) < PERF_KEPT:
            self.perf.append({"kind": job.kind, "q": job.cfg.nnz, "wnz": job.cfg.wnz, "hw": job.cfg.h * job.cfg.w,
                              "dense": job.cfg.dense, "cyc_compute": rd["cyc_compute"], "cycles": d})
        return errs

    def _words(self, obs: Observation) -> list[tuple[int, int, int, bool]]:
        return sparse.unpack_out([b["data"] for b in obs.outputs.get("o", [])], self.params)

    def _check_words(self, job: StuJob, obs: Observation) -> list[str]:
        g, p = job.golden, self.params
        got = [b["data"] for b in obs.outputs.get("o", [])]
        want = sparse.pack_out(g.out_entries, p)
        errs = []
        if got != want:
            k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            errs.append(f"{len(got)} output words, golden {len(want)}; first difference at word {k}: "
                        f"{sparse.unpack_out(got[k:k + 1], p)} vs {sparse.unpack_out(want[k:k + 1], p)}")
        if job.X is not None and job.cfg.emit and job.acc_in is None and not job.refused:
            ref = sparse.drain_entries(sparse.drain(sparse.correlate_full(job.X, job.Wk, k=job.cfg.k), job.cfg, p))
            if [w[:3] for w in self._words(obs)] != ref:
                errs.append("the output differs from numpy's drain(correlate_full(X, Wk))")
        return errs

    def _lanes(self, row: tuple[int, ...]) -> list[int]:
        """Accumulator addresses of the lanes adding in one tap sample."""
        we, addr = row[0], row[1]
        mask = (1 << self.ab) - 1
        return [(addr >> (l * self.ab)) & mask for l in range(self.params.p) if we >> l & 1]

    def _check_taps(self, job: StuJob, taps: list[tuple[int, ...]]) -> list[str]:
        errs = []
        for k, row in enumerate(taps):
            lanes = self._lanes(row)
            if len(set(lanes)) != len(lanes):
                errs.append(f"cycle +{k}: two lanes add to one accumulator address {sorted(lanes)}")
                break
            if len(row) > 2 and row[2] > self.params.fifo_d:
                errs.append(f"cycle +{k}: collision FIFO holds {row[2]} items, fifo_d = {self.params.fifo_d}")
                break
        return errs

    def _check_hand(self, job: StuJob, obs: Observation) -> list[str]:
        """Directed jobs against the numbers worked out by hand (not the golden model)."""
        e, rd, errs = job.expect, obs.read, []
        if not e:
            return errs
        d = len(obs.trace["done"]) - 1
        if "entries" in e and [w[:3] for w in self._words(obs)] != e["entries"]:
            errs.append(f"by hand: entries {e['entries']}, got {[w[:3] for w in self._words(obs)]}")
        if "cycles" in e and job.bp == 0 and d != e["cycles"]:
            errs.append(f"by hand: start to done {e['cycles']} cycles, got {d}")
        for key, name in (("rounds", "n_rounds"), ("n_mults", "n_mults"), ("n_deferred", "n_deferred")):
            if key in e and rd[name] != e[key]:
                errs.append(f"by hand: {name} = {e[key]}, got {rd[name]}")
        if "lanes" in e:  # round k adds in cycle k + 2 (read-modify-write after the round)
            got = [row[0] for row in rd["taps"][2:2 + len(e["lanes"])]]
            if got != e["lanes"]:
                errs.append(f"by hand: the rounds' lanes {[bin(x) for x in e['lanes']]}, got {[bin(x) for x in got]}")
        if "fifo_max" in e:
            occ = max((row[2] for row in rd["taps"] if len(row) > 2), default=0)
            if occ != e["fifo_max"]:
                errs.append(f"by hand: the FIFO holds at most {e['fifo_max']} items, got {occ}")
        return errs

    # ---- coverage -------------------------------------------------------------------
    def define_coverage(self, cg: Covergroup) -> None:
        p = self.params
        cg.point("mode", lambda s: s["mode"], ["conv", "dense", "fc", "refused"])
        cg.point("density", lambda s: s["density"], DENSITY_BINS)
        cg.point("q_mod_p", lambda s: s["q_mod_p"], list(range(p.p)))
        cg.point("kernel", lambda s: s["kernel"], ["empty", "single", "partial", "full"])
        cg.point("k", lambda s: s["k"], sorted({"1", "max"} | ({"mid"} if p.kmax > 2 else set())))
        cg.point("pool", lambda s: s["pool"], list(p.POOL_MODES))
        cg.point("relu", lambda s: s["relu"], [False, True])
        cg.point("shift", lambda s: s["shift"], [False, True])
        cg.point("emit", lambda s: s["emit"], [0, 1])
        cg.point("backpressure", lambda s: s["bp"], [False, True])
        cg.point("b2b_same_address", lambda s: s["b2b"], [False, True])
        cg.point("error", lambda s: s["error"], ["none", *p.STU_ERR_NAMES[:3]])

    def sample(self, job: StuJob, obs: Observation) -> dict[str, Any]:
        p, c, g = self.params, job.cfg, job.golden
        taps = obs.read.get("taps", [])
        prev: set[int] = set()
        b2b = False
        for row in taps:  # consecutive read-modify-write cycles on one address
            cur = set(self._lanes(row))
            b2b |= bool(cur & prev)
            prev = cur
        if self.rounds is not None and len(taps) and len(taps[0]) > 2 and not job.refused:  # u = 2: round k's FIFO holds round k-1's deferrals
            occ = [row[2] for row in taps[1:1 + g.cyc_compute]]
            for k, o in enumerate(occ):
                dfr = occ[k + 1] if k + 1 < len(occ) else 0
                self.rounds.sample({"deferred": _two(dfr), "occ": _two(o)})
        raised = [n for n in p.STU_ERR_NAMES if g.errors & sparse.STU_ERR[n]]
        if job.poke is not None:
            raised.append("START_BUSY")
        if job.reset_at is not None or job.refused:
            none = dict.fromkeys(("density", "q_mod_p", "kernel", "k", "pool", "relu", "shift", "emit", "bp", "b2b"))
            return {**none, "mode": "refused" if job.refused else None, "error": raised[0] if raised else None}
        size = c.h * c.w
        ksq = c.k * c.k
        wnz = c.wnz if c.mode != sparse.FC else None
        return {
            "mode": "fc" if c.mode == sparse.FC else "dense" if c.dense else "conv",
            "density": density_bin(int(np.count_nonzero([e[2] for e in job.data])), size),
            "q_mod_p": c.nnz % p.p,
            "kernel": None if wnz is None else "empty" if wnz == 0 else "single" if wnz == 1 and ksq > 1
            else "full" if wnz == ksq else "partial",
            "k": None if c.mode == sparse.FC else "1" if c.k == 1 else "max" if c.k == p.kmax else "mid",
            "pool": c.pool_name if c.emit else None,
            "relu": bool(c.relu) if c.emit else None,
            "shift": c.shift > 0 if c.emit else None,
            "emit": c.emit,
            "bp": bool(np.any(obs.trace["o_valid"] & (1 - obs.trace["o_ready"]))),
            "b2b": b2b,
            "error": raised[0] if raised else "none",
        }


def _two(n: int) -> str:
    return str(n) if n < 2 else "2+"


class StuTest(JobTest):
    """Every job of the scenario against the golden model; also reports the round
    coverage and the cycles measured per job."""

    UNIT = StuUnit

    def report_phase(self) -> None:
        super().report_phase()
        unit: StuUnit = self.unit
        if unit.rounds is not None:
            self.ctx.summary["rounds_coverage"] = unit.rounds.summary()
        self.ctx.summary["perf"] = unit.perf
        self.ctx.write_summary()
