"""Testbench knowledge of the raster blocks: ``sp_encoder``, ``sp_decoder`` and
``nnz_profiler`` (docs/sparse.md section 9; behaviour in :mod:`lockstep.gen.sparse.stream`).

Stimulus (shared): corner maps first (1 x 1 zero and non-zero, all-zero and all-dense
``hmax x wmax``, one row, one column), starts the blocks must refuse (``H`` or ``W`` 0 or
beyond ``hmax``/``wmax``), then random maps whose density is drawn from 0..100% bins and
whose sizes favour 1 and the maximum. Each job has its own input-idle and output
back-pressure rates (some jobs none, to check the exact cycle counts); some get a second
``start`` pulse while busy, which must change nothing.

The checks ask the golden model (:mod:`lockstep.models.sparse`) or numpy:

* encoder: the words equal ``pack_data(encode(X).entries)`` and decode back to ``X``;
  ``nnz`` at ``done``; ``in_ready`` low in the raster only while the output register is
  full and not taken (only stalls stretch the job), and low once the last value is taken; ``done`` one cycle after the LAST
  handshake (after the last raster value when ``nnz = 0``); without stalls ``start`` to
  ``done`` is ``H*W + 1`` (``nnz = 0``), ``H*W + 2``, or ``H*W + 3`` when the raster's
  last value is a non-zero following another (the held word and the last go out one
  after the other).
* decoder: fed ``pack_data(encode(X).entries)`` it emits exactly ``decode(...) = X``,
  ``H*W`` values; without stalls ``start`` to ``done`` is ``H*W + 2``. One extra word out
  of range, or repeated, is dropped (``err`` DROP) and changes nothing else. A stream
  ends on ``cfg_nnz`` words or on a LAST: ``end_count`` jobs have no LAST, ``end_last``
  jobs a ``cfg_nnz`` beyond their words (an encoder's stream has both at once).
* profiler: per-row and per-column counts read through ``rd_sel/rd_addr`` equal numpy's
  ``count_nonzero`` (0 beyond ``H``/``W``), ``total`` too; ``in_ready == busy``;
  ``done`` one cycle after the last value.
* all: refused starts pulse ``done`` in the next cycle and consume nothing, ``busy`` is
  high exactly from the cycle after ``start`` to the cycle before ``done``, and the sticky
  ``err`` equals the OR of what the jobs so far should have raised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from cocotb import start_soon
from cocotb.triggers import ClockCycles, ReadWrite, RisingEdge, Timer

from lockstep.models import sparse
from lockstep.models.sparse.params import SparseParams

from ..coverage import Covergroup
from ..packing import to_signed
from .job_env import JobBfm, JobTest, JobUnit, Observation, handshakes

__all__ = ["DecoderTest", "EncoderTest", "ProfilerTest", "RasterJob", "density_bin", "random_map"]

#: Density bins (percent of non-zero positions).
DENSITY_BINS = ["0%", "1-25%", "26-50%", "51-75%", "76-99%", "100%"]
#: Stall settings a job draws from: (input idle rate, output back-pressure rate).
STALLS = [(0.0, 0.0), (0.3, 0.0), (0.0, 0.4), (0.3, 0.5), (0.6, 0.6)]


def density_bin(nnz: int, size: int) -> str:
    """The :data:`DENSITY_BINS` bin of ``nnz`` non-zeros among ``size`` positions."""
    if nnz == 0:
        return "0%"
    if nnz == size:
        return "100%"
    pct = 100.0 * nnz / size
    return "1-25%" if pct <= 25 else "26-50%" if pct <= 50 else "51-75%" if pct <= 75 else "76-99%"


def nonzero_values(rng: np.random.Generator, n: int, bits: int) -> np.ndarray:
    """``n`` non-zero ``bits``-bit signed values; one in eight an extreme (-2**(b-1),
    2**(b-1)-1, +-1)."""
    lo, hi = sparse.signed_range(bits)
    v = rng.integers(lo, hi, size=n, endpoint=True)
    v = np.where(v == 0, 1, v)
    pick = rng.random(n) < 0.125
    v[pick] = rng.choice(np.array([lo, hi, 1, -1]), size=int(pick.sum()))
    return v.astype(np.int64)


def random_map(rng: np.random.Generator, h: int, w: int, nnz: int, bits: int) -> np.ndarray:
    """An ``h x w`` map with exactly ``nnz`` non-zeros at random positions."""
    X = np.zeros(h * w, dtype=np.int64)
    X[rng.choice(h * w, size=nnz, replace=False)] = nonzero_values(rng, nnz, bits)
    return X.reshape(h, w)


def _size(rng: np.random.Generator, top: int) -> int:
    r = rng.random()
    return 1 if r < 0.2 else top if r < 0.45 else int(rng.integers(1, top + 1))


@dataclass
class RasterJob:
    """One job of a raster block.

    Attributes:
        X: the map (``None`` for a refused start).
        h, w: ``cfg_h``/``cfg_w`` driven (the map's shape unless refused).
        idle, bp: input idle and output back-pressure rates.
        poke: cycles after ``start`` at which a second ``start`` pulses (or ``None``).
        kind: the stimulus kind (for the log and coverage).
        words: a decoder's input stream when it is not ``pack_data(encode(X))`` (a
            ``drop`` job: one extra word the decoder must drop; an ``end`` job: no LAST).
        nnz: the decoder's ``cfg_nnz`` when it is not the number of words (an
            ``end_last`` job: more, so only the LAST flag ends the stream).
    """

    X: np.ndarray | None
    h: int
    w: int
    idle: float = 0.0
    bp: float = 0.0
    poke: int | None = None
    kind: str = "random"
    words: list[int] | None = None
    nnz: int | None = None

    def __repr__(self) -> str:
        nnz = "-" if self.X is None else int(np.count_nonzero(self.X))
        return f"{self.kind} {self.h}x{self.w} nnz={nnz} idle={self.idle} bp={self.bp} poke={self.poke}"

    @property
    def refused(self) -> bool:
        return self.X is None


def raster_jobs(rng: np.random.Generator, p: SparseParams, count: int) -> list[RasterJob]:
    """Corner maps, refused starts, then random maps (module docstring)."""
    H, W, bits = p.hmax, p.wmax, p.dw
    dense = lambda h, w: random_map(rng, h, w, h * w, bits)  # noqa: E731
    jobs = [
        RasterJob(np.zeros((1, 1), np.int64), 1, 1, kind="zero1x1"),
        RasterJob(dense(1, 1), 1, 1, kind="one1x1"),
        RasterJob(np.zeros((H, W), np.int64), H, W, kind="allzero"),
        RasterJob(dense(H, W), H, W, kind="alldense"),
        RasterJob(random_map(rng, 1, W, int(rng.integers(0, W + 1)), bits), 1, W, kind="row"),
        RasterJob(random_map(rng, H, 1, int(rng.integers(0, H + 1)), bits), H, 1, kind="col"),
        RasterJob(None, 0, W, kind="refused"),
        RasterJob(None, H + 1, 1, kind="refused"),
        RasterJob(None, 1, 0, kind="refused"),
        RasterJob(None, H, W + 1, kind="refused"),
        RasterJob(dense(H, W), H, W, 0.3, 0.5, kind="alldense"),
    ]
    first_random = len(jobs)
    while len(jobs) < count:
        k = len(jobs) - first_random
        if k < 4:  # the first four random maps cover the partial-density bins, 3 x 3 or more
            h, w = int(rng.integers(min(3, H), H + 1)), int(rng.integers(min(3, W), W + 1))
            dbin = k + 1
        else:
            h, w = _size(rng, H), _size(rng, W)
            dbin = int(rng.integers(0, len(DENSITY_BINS)))
        fits = [n for n in range(h * w + 1) if density_bin(n, h * w) == DENSITY_BINS[dbin]]
        n = int(rng.choice(fits)) if fits else int(rng.integers(0, h * w + 1))
        idle, bp = STALLS[int(rng.integers(0, len(STALLS)))]
        poked = rng.random() < 0.2 or len(jobs) == first_random  # the first one always
        poke = int(rng.integers(1, h * w + 1)) if poked else None
        jobs.append(RasterJob(random_map(rng, h, w, n, bits), h, w, idle, bp, poke))
    return jobs


class RasterUnit(JobUnit):
    """What the three raster blocks share: jobs, the start/done protocol, cover points."""

    controls: ClassVar[list[str]] = ["start", "busy", "done"]
    idle_inputs: ClassVar[dict[str, int]] = {"start": 0, "cfg_h": 0, "cfg_w": 0}
    err_names: ClassVar[tuple[str, ...]] = ("CFG",)
    default_jobs = 40

    def __init__(self, ctx: Any, params: SparseParams) -> None:
        super().__init__(ctx, params)
        self.sticky = 0

    def jobs(self, rng: np.random.Generator, count: int) -> list[RasterJob]:
        return raster_jobs(rng, self.params, count)

    def budget(self, job: RasterJob) -> int:
        return int((job.h * job.w + 8) / ((1 - job.idle) * (1 - job.bp))) + 16

    def cfg(self, job: RasterJob) -> dict[str, int]:
        """``cfg_*`` values of a job (the decoder adds ``cfg_nnz``)."""
        return {"cfg_h": job.h, "cfg_w": job.w}

    def inputs(self, job: RasterJob) -> list[dict[str, int]]:
        """The input stream's words."""
        raise NotImplementedError

    async def readback(self, bfm: JobBfm, job: RasterJob) -> dict[str, Any]:
        """Status read in the ``done`` cycle (and ports swept after it)."""
        return {"err": int(bfm.dut.err.value)}

    async def drive(self, bfm: JobBfm, job: RasterJob) -> tuple[int, int, dict[str, Any]]:
        dut = bfm.dut
        bfm.set_rates(job.idle, job.bp)
        await RisingEdge(dut.clk)
        first = bfm.now
        for name, value in self.cfg(job).items():
            getattr(dut, name).value = value
        dut.start.value = 1
        words = [] if job.refused else self.inputs(job)
        feed = start_soon(bfm.send("in", words)) if words else None  # first valid at +1 at the latest
        await RisingEdge(dut.clk)
        dut.start.value = 0
        done = start_soon(bfm.wait_high("done"))
        if job.poke is not None:
            await ClockCycles(dut.clk, job.poke)
            await ReadWrite()  # this cycle's busy (after the edge's updates), still writable
            if int(dut.busy.value) and not done.done():
                dut.start.value = 1  # while busy: must be ignored
                dut.cfg_h.value = 1
                dut.cfg_w.value = 1
                await RisingEdge(dut.clk)
                dut.start.value = 0
        last = await done
        read = await self.readback(bfm, job)
        if feed is not None and not feed.done():
            read["stuck"] = "input words left after done"
        return first, last, read

    # ---- checks -----------------------------------------------------------------
    def expect_err(self, job: RasterJob) -> int:
        """The sticky ``err`` after this job (the OR so far)."""
        if job.refused:
            self.sticky |= 1 << self.err_names.index("CFG")
        if job.kind.startswith("drop"):
            self.sticky |= 1 << self.err_names.index("DROP")
        return self.sticky

    def check_protocol(self, job: RasterJob, obs: Observation) -> list[str]:
        """start/busy/done rules and the sticky err (every raster block)."""
        tr, errs = obs.trace, []
        d = len(tr["done"]) - 1
        if not tr["start"][0] or tr["busy"][0]:
            errs.append("start not accepted in its cycle (busy was high)")
        if tr["done"][:d].any():
            errs.append(f"done pulsed early, at +{int(np.flatnonzero(tr['done'][:d])[0])}")
        want = self.expect_err(job)
        if obs.read.get("err") != want:
            errs.append(f"err = {obs.read.get('err'):#x}, expected {want:#x} ({self.err_names})")
        if "stuck" in obs.read:
            errs.append(obs.read["stuck"])
        if job.refused:
            if d != 1:
                errs.append(f"refused start: done at +{d}, expected +1")
            if tr["busy"].any():
                errs.append("refused start: busy went high")
            if any(obs.inputs.values()) or any(obs.outputs.values()):
                errs.append("refused start: a stream moved")
            return errs
        if not tr["busy"][1:d].all() or tr["busy"][d]:
            errs.append(f"busy not high exactly from +1 to +{d - 1}")
        ins = handshakes(tr, "in")
        if len(ins) and ins[0] < 1:
            errs.append("an input was accepted in the start cycle")
        return errs

    # ---- coverage ------------------------------------------------------------------
    def define_coverage(self, cg: Covergroup) -> None:
        p = self.params
        cg.point("density", lambda s: s["density"], DENSITY_BINS)
        cg.point("height", lambda s: s["height"], sorted({"1", "max", "mid"} if p.hmax > 2 else {"1", "max"}))
        cg.point("width", lambda s: s["width"], sorted({"1", "max", "mid"} if p.wmax > 2 else {"1", "max"}))
        cg.point("refused", lambda s: s["refused"], [False, True])
        cg.point("start_while_busy", lambda s: s["poke"], [False, True])
        cg.point("input_idle", lambda s: s["idle"], [False, True])

    def sample(self, job: RasterJob, obs: Observation) -> dict[str, Any]:
        p = self.params

        def size_bin(n: int, top: int) -> str:
            return "1" if n == 1 else "max" if n == top else "mid"

        tr = obs.trace
        ins = handshakes(tr, "in")
        idle = bool(len(ins)) and bool((tr["in_valid"][1 : ins[-1] + 1] == 0).any())
        if job.refused:
            return {"density": None, "height": None, "width": None, "refused": True, "poke": False, "idle": idle}
        return {
            "density": density_bin(int(np.count_nonzero(job.X)), job.X.size),
            "height": size_bin(job.h, p.hmax),
            "width": size_bin(job.w, p.wmax),
            "refused": False,
            "poke": job.poke is not None and bool((tr["start"][1:] & tr["busy"][1:]).any()),
            "idle": idle,
        }


class EncoderUnit(RasterUnit):
    """``sp_encoder``: raster in, data stream out."""

    sources = {"in": ["data"]}
    sinks = {"out": ["data"]}
    covergroup = "sparse.encoder"

    def inputs(self, job: RasterJob) -> list[dict[str, int]]:
        mask = (1 << self.params.dw) - 1
        return [{"data": int(v) & mask} for v in job.X.ravel()]

    async def readback(self, bfm: JobBfm, job: RasterJob) -> dict[str, Any]:
        return {"err": int(bfm.dut.err.value), "nnz": int(bfm.dut.nnz.value)}

    def check(self, job: RasterJob, obs: Observation) -> list[str]:
        errs = self.check_protocol(job, obs)
        if job.refused:   # a refused job counts nothing (sp_encoder@5aec m018: nnz = 16 after one survived)
            if obs.read["nnz"] != 0:
                errs.append(f"refused start: nnz = {obs.read['nnz']}, expected 0")
            return errs
        p, X = self.params, job.X
        sub = sparse.encode(X)
        want = sparse.pack_data(sub.entries, p)
        got = [b["data"] for b in obs.outputs["out"]]
        if got != want:
            k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            errs.append(f"{len(got)} words, expected {len(want)}; first difference at word {k}: "
                        f"{sparse.unpack_data(got[k:k + 1], p)} vs {sparse.unpack_data(want[k:k + 1], p)}")
        else:
            back = sparse.decode(sparse.SubFM(0, 0, job.h, job.w, [e[:3] for e in sparse.unpack_data(got, p)]))
            if not np.array_equal(back, X):
                errs.append("the words do not decode back to the map")
        if obs.read["nnz"] != sub.nnz:
            errs.append(f"nnz = {obs.read['nnz']}, expected {sub.nnz}")
        tr = obs.trace
        d = len(tr["done"]) - 1
        ins, outs = handshakes(tr, "in"), handshakes(tr, "out")
        if len(ins) != X.size:
            return errs + [f"{len(ins)} raster values accepted, expected {X.size}"]
        stalled = tr["out_valid"] & (1 - tr["out_ready"])
        refused = np.flatnonzero((tr["in_ready"][1 : ins[-1] + 1] == 0) & (stalled[1 : ins[-1] + 1] == 0))
        if len(refused):
            errs.append(f"in_ready low at +{int(refused[0]) + 1} with the output register free")
        after = np.flatnonzero(tr["in_ready"][ins[-1] + 1:] != 0)
        if len(after):   # the raster is over: nothing more may be taken (a held 'feeding' would)
            errs.append(f"in_ready high at +{ins[-1] + 1 + int(after[0])}, after the last raster value was taken")
        end = outs[-1] if sub.nnz else ins[-1]
        if d != end + 1:
            errs.append(f"done at +{d}, expected one cycle after the last handshake (+{end})")
        if job.idle == 0 and job.bp == 0:
            flat = X.ravel()
            tail = 0 if sub.nnz == 0 else 2 if (flat[-1] != 0 and sub.nnz >= 2) else 1
            if d != X.size + 1 + tail:
                errs.append(f"without stalls start to done took {d} cycles, expected H*W + 1 + {tail}")
        return errs

    def define_coverage(self, cg: Covergroup) -> None:
        super().define_coverage(cg)
        cg.point("backpressure", lambda s: s["bp"], [False, True])
        cg.point("held_then_last", lambda s: s["held"], [False, True])

    def sample(self, job: RasterJob, obs: Observation) -> dict[str, Any]:
        s = super().sample(job, obs)
        tr = obs.trace
        s["bp"] = bool((tr["out_valid"] & (1 - tr["out_ready"])).any())
        s["held"] = (not job.refused and job.X.ravel()[-1] != 0 and np.count_nonzero(job.X) >= 2)
        return s


class DecoderUnit(RasterUnit):
    """``sp_decoder``: data stream in, raster out."""

    sources = {"in": ["data"]}
    sinks = {"out": ["data"]}
    idle_inputs = {**RasterUnit.idle_inputs, "cfg_nnz": 0}
    err_names = ("CFG", "DROP")
    covergroup = "sparse.decoder"

    def jobs(self, rng: np.random.Generator, count: int) -> list[RasterJob]:
        """The raster jobs, then one ``drop_oob`` and one ``drop_dup`` job: the map's
        words plus one word out of range (where ``rb``/``cb`` leave room) or a repeated
        word before the last entry, which the decoder must drop (``err`` DROP) without
        changing the raster. (A word after the entry of the last position is never seen:
        the job ends with the raster and leaves it on the stream.)"""
        p = self.params
        jobs = raster_jobs(rng, p, count)
        for kind in ("drop_oob", "drop_dup") if p.hmax * p.wmax >= 2 else ():
            # the extra word goes before the last entry: it must reach the head of the
            # stream while the raster is still being walked
            h = int(rng.integers(min(2, p.hmax), p.hmax + 1))
            w = int(rng.integers(2 if h == 1 else 1, p.wmax + 1))  # two positions at least
            X = random_map(rng, h, w, int(rng.integers(min(2, h * w), h * w + 1)), p.dw)
            ents = [e + (False,) for e in sparse.encode(X).entries]
            k = int(rng.integers(0, max(1, len(ents) - 1)))
            if kind == "drop_oob" and (h < 1 << p.rb or w < 1 << p.cb):
                bad = (h, 0, 1, False) if h < 1 << p.rb else (0, w, 1, False)
                ents.insert(k, bad)
            else:
                kind = "drop_dup"
                ents.insert(k + 1, ents[k])
            ents[-1] = ents[-1][:3] + (True,)
            jobs.append(RasterJob(X, h, w, kind=kind, words=sparse.pack_data(ents, p)))
        # The stream ends on cfg_nnz words or a LAST consumed; an encoder's stream has both
        # at once, so one of them broken changes nothing. These maps end in zeros (the
        # raster needs the end of the stream to go on) and their streams have one only:
        # end_count no LAST flag, end_last a cfg_nnz beyond the words.
        for kind in ("end_count", "end_last") if p.hmax * p.wmax >= 2 else ():
            h = int(rng.integers(1, p.hmax + 1))
            w = int(rng.integers(2 if h == 1 else 1, p.wmax + 1))
            X = random_map(rng, h, w, int(rng.integers(1, h * w)), p.dw)
            flat = X.ravel()
            if flat[-1] != 0:                       # the last position zero, the non-zeros kept
                flat[int(np.flatnonzero(flat == 0)[0])] = flat[-1]
                flat[-1] = 0
            ents = [e + (kind == "end_last" and i == np.count_nonzero(X) - 1,)
                    for i, e in enumerate(sparse.encode(X).entries)]
            more = int(rng.integers(1, 4)) if kind == "end_last" else 0
            jobs.append(RasterJob(X, h, w, kind=kind, words=sparse.pack_data(ents, p),
                                  nnz=min(len(ents) + more, (1 << SparseParams.NNZ_BITS) - 1)))
        return jobs

    def cfg(self, job: RasterJob) -> dict[str, int]:
        nnz = 0 if job.refused else job.nnz if job.nnz is not None else len(self.inputs(job))
        return {"cfg_h": job.h, "cfg_w": job.w, "cfg_nnz": nnz}

    def inputs(self, job: RasterJob) -> list[dict[str, int]]:
        words = job.words if job.words is not None else sparse.pack_data(sparse.encode(job.X).entries, self.params)
        return [{"data": w} for w in words]

    def check(self, job: RasterJob, obs: Observation) -> list[str]:
        errs = self.check_protocol(job, obs)
        if job.refused:
            return errs
        p = self.params
        sub = sparse.encode(job.X)
        want = sparse.decode(sub).ravel()
        got = np.array([to_signed(b["data"], p.dw) for b in obs.outputs["out"]], dtype=np.int64)
        if len(got) != len(want) or not np.array_equal(got, want):
            bad = np.flatnonzero(got[: len(want)] != want[: len(got)])
            where = f"; first difference at position {int(bad[0])}: {int(got[bad[0]])} vs {int(want[bad[0]])}" \
                if len(bad) else ""
            errs.append(f"{len(got)} values, expected {len(want)}{where}")
        ins = handshakes(obs.trace, "in")
        if len(ins) != len(self.inputs(job)):
            errs.append(f"{len(ins)} words consumed, expected {len(self.inputs(job))}")
        d = len(obs.trace["done"]) - 1
        if job.idle == 0 and job.bp == 0 and job.words is None and d != job.X.size + 2:
            errs.append(f"without stalls start to done took {d} cycles, expected H*W + 2")
        return errs

    def define_coverage(self, cg: Covergroup) -> None:
        super().define_coverage(cg)
        cg.point("backpressure", lambda s: s["bp"], [False, True])
        cg.point("dropped", lambda s: s["drop"], ["none", "drop_oob", "drop_dup"])
        cg.point("stream_end", lambda s: s["end"], ["both", "end_count", "end_last"])

    def sample(self, job: RasterJob, obs: Observation) -> dict[str, Any]:
        s = super().sample(job, obs)
        tr = obs.trace
        s["bp"] = bool((tr["out_valid"] & (1 - tr["out_ready"])).any())
        s["drop"] = job.kind if job.kind.startswith("drop") else "none"
        s["end"] = job.kind if job.kind.startswith("end_") else "both"
        return s


class ProfilerUnit(RasterUnit):
    """``nnz_profiler``: raster in, counts read back."""

    sources = {"in": ["data"]}
    idle_inputs = {**RasterUnit.idle_inputs, "rd_sel": 0, "rd_addr": 0}
    covergroup = "sparse.profiler"
    #: numpy's ``(rows/cols counts, total)`` of the last accepted job (None before one)
    _last: tuple[dict[str, np.ndarray], int] | None = None

    def inputs(self, job: RasterJob) -> list[dict[str, int]]:
        mask = (1 << self.params.dw) - 1
        return [{"data": int(v) & mask} for v in job.X.ravel()]

    async def readback(self, bfm: JobBfm, job: RasterJob) -> dict[str, Any]:
        dut = bfm.dut
        read = {"err": int(dut.err.value), "total": int(dut.total.value)}
        n = 1 << len(dut.rd_addr)
        for sel, name in ((0, "rows"), (1, "cols")):
            got = []
            for a in range(n):
                await Timer(1, "ns")  # leave the read-only phase; the port is combinational
                dut.rd_sel.value = sel
                dut.rd_addr.value = a
                await Timer(1, "ns")
                got.append(int(dut.rd_data.value))
            read[name] = np.array(got, dtype=np.int64)
        return read

    @staticmethod
    def _compare(obs: Observation, counts: dict[str, np.ndarray], total: int) -> list[str]:
        """The read-back ``rows``/``cols`` tables and ``total`` against numpy's counts."""
        errs = []
        for name in ("rows", "cols"):
            want = np.zeros(len(obs.read[name]), dtype=np.int64)
            want[: len(counts[name])] = counts[name]
            bad = np.flatnonzero(obs.read[name] != want)
            if len(bad):
                i = int(bad[0])
                errs.append(f"{name}[{i}] = {int(obs.read[name][i])}, numpy {int(want[i])} ({len(bad)} differ)")
        if obs.read["total"] != total:
            errs.append(f"total = {obs.read['total']}, numpy {total}")
        return errs

    def check(self, job: RasterJob, obs: Observation) -> list[str]:
        errs = self.check_protocol(job, obs)
        if job.refused:   # the counts stay those of the last accepted job (unknown before one)
            if self._last is not None:
                errs += [f"refused start: {e} (the last accepted job's)" for e in self._compare(obs, *self._last)]
            return errs
        X = job.X
        want = {name: np.count_nonzero(X, axis=axis) for name, axis in (("rows", 1), ("cols", 0))}
        self._last = (want, int(np.count_nonzero(X)))
        errs += self._compare(obs, *self._last)
        tr = obs.trace
        if not np.array_equal(tr["in_ready"][1:], tr["busy"][1:]):
            errs.append("in_ready differs from busy")
        ins = handshakes(tr, "in")
        d = len(tr["done"]) - 1
        if len(ins) != X.size:
            errs.append(f"{len(ins)} raster values accepted, expected {X.size}")
        elif d != ins[-1] + 1:
            errs.append(f"done at +{d}, expected one cycle after the last value (+{int(ins[-1])})")
        return errs


class EncoderTest(JobTest):
    UNIT = EncoderUnit


class DecoderTest(JobTest):
    UNIT = DecoderUnit


class ProfilerTest(JobTest):
    UNIT = ProfilerUnit
