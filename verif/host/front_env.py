"""pyuvm environment of the host family's command front end ``host_front`` (docs/host.md
sections 4-7 and 11), the standalone DUT.

Python plays both sides:

* the **host** (:class:`Host`): CSR writes and reads through the port, one of each at
  most per cycle: descriptors into SQ slots, SQ_TAIL doorbells, CQ reads and CQ_HEAD
  writes, CTRL, the limits, IRQ_STATUS W1C, PERF_CTRL;
* the **kernels** (:class:`KernelModel`, ``n_kernels`` of them): a kernel takes a command
  in a cycle its ``cmd_ready`` and its ``cmd_valid`` bit are 1 (cycle 0), is busy in cycles
  1 .. E (E random, mostly 2 .. 16; with a narrow ``cnt_bits``, at most 10, one task in 6
  runs 16 .. ``2**cnt_bits + 24`` cycles, so the completion's cycles take every bit and now
  and then wrap), then offers a completion (OK, or MEM_ERR when one of its word
  ranges meets the run's error window) until ``cpl_ready``, and is idle from the cycle
  after; with ``k_abort`` seen while busy it stops within a few cycles and completes
  ABORTED. While busy it raises ``k_stall`` in random cycles; the memory port's
  ``rd_beat`` / ``wr_beat`` are random while some kernel is busy.

:class:`FrontBfm` runs one cycle per :meth:`~FrontBfm.step` (inputs driven after the
falling edge, outputs read 1 ns later, kernel transitions at the rising edge that ends the
cycle) and checks in every cycle: ``cmd_valid`` one-hot to the lowest ready kernel and
never to a busy one; kernel 1's completion never taken while kernel 0 offers one;
``busy`` = some kernel busy; ``k_abort`` high the cycle after a soft reset. It counts what
it drove (each kernel's busy cycles, beats, stall bits, cycles with CTRL.enable) for the
counters. Every STATUS read also checks the busy bits against ``k_busy`` and flushing
against ``k_abort``; every CQ_TAIL read ``cq_nonempty``; IRQ_STATUS reads ``irq``.

The run is a list of *phases* (the ``phases`` option; sequence items). Each phase starts
and ends quiet (SQ and CQ empty, kernels idle, every completion read):

* ``reset``: every register's reset value, RO registers and unmapped addresses ignoring
  writes, WGT_BASE bits [1:0], MEM_LIMIT clamped, CTRL read-back, an empty flush; as the
  run's first phase, a doorbell over the never-written slot 0 (all-zero words: BAD_MAGIC).
* ``pointers``: (enable off) a full SQ, a write just past the SQ slots and a doorbell
  repeating the tail not flagged, doorbell overflow and a backward doorbell ignored
  and flagged, a write to an owned slot ignored and flagged, a bad CQ_HEAD flagged; IRQ
  W1C bit by bit and ``irq``; then the SQ drains.
* ``stream``: random descriptors of every class (OK, NOP, each error, several at once,
  results in the error window) with random batches, doorbells (one per batch or back to
  back), partial CQ reads, idle gaps and writes into slots the host handed over (ignored
  while owned: the statuses would show a corrupted descriptor).
* ``b2b``: doorbells in consecutive cycles.
* ``irq``: IRQ_STATUS cpl / err per descriptor, ``irq`` with irq_en on and off.
* ``halt``: halt_on_error with an error completion: nothing fetched until resume (bit 4
  written to another register does not resume).
* ``cqfull``: the host stops reading: the CQ fills, kernels hold their completions,
  PERF_CQ_STALL equals the cycles a completion waited on the full CQ, a front-end
  completion waits too; nothing is lost; PERF_CTRL clears PERF_CQ_STALL.
* ``limits``: MEM_LIMIT below the memory and a weight region beyond it (WGT_RANGE).
* ``flush``: soft reset with tasks in the kernels and in the SQ (optionally with a full
  CQ), submissions during the flush; ABORTED once each, then new submissions work.

:class:`FrontScoreboard` holds every phase to :class:`lockstep.models.host.FrontModel`
(one instance across the run, so EXP_SEQ chains): each descriptor in SQ order is
``submit``-ted (or ``flush``-ed when the flush took it) and

* its CQ entry (exactly one per tag) has the model's status; front-end entries kernel id
  15 and 0 cycles; kernel entries the kernel that ran it, its reported status and busy
  cycles modulo ``2**cnt_bits`` (the model's OK / MEM_ERR, or ABORTED when the kernel was
  aborted);
* the dispatched commands, in order, carry the model's on-kernel descriptors' fields
  (``cmd_wgt = (WGT_BASE + wgt_off) >> 2``, word addresses);
* :func:`~lockstep.models.host.order_problems` finds nothing in the CQ;
* at the phase's end EXP_SEQ equals the model's, the counters equal what was driven and
  read (PERF_DONE + PERF_ERR = completions), each modulo ``2**cnt_bits`` (they wrap;
  differences of two reads too), IRQ_STATUS the accumulated bits; and each phase's own
  checks (register values against the contract) hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, SimTimeoutError, Timer, with_timeout
from pyuvm import ConfigDB, uvm_analysis_port, uvm_driver, uvm_subscriber, uvm_test

from lockstep.models import host
from lockstep.models.host.params import HostParams
from lockstep.models.host import CQ_BASE, CSR, FE_KERNEL, ID_VALUE, MATMUL, NOP, SQ_BASE, ST, Completion, Descriptor

from ..context import CLOCK_NS, TbContext, start
from ..coverage import Covergroup
from ..seq import DriverEnv, ListSeq

__all__ = ["FrontTest", "PHASES"]

M32 = (1 << 32) - 1
# docs/host.md section 4, read independently of the generator
CTRL_EN, CTRL_SR, CTRL_IRQ, CTRL_HOE, CTRL_RES = 1, 2, 4, 8, 16
S_BUSY, S_SQ_FULL, S_SQ_EMPTY, S_CQ_FULL, S_CQ_EMPTY, S_ERR, S_HALTED, S_FLUSHING = (1 << i for i in range(8))
S_KBUSY = 8  # bits [9:8]
IRQ_CPL, IRQ_ERR, IRQ_DBO, IRQ_OWN, IRQ_CQH = (1 << i for i in range(5))
SQ_SLOT, CQ_SLOT = 32, 8
PERF = ("PERF_BUSY", "PERF_TOTAL", "PERF_DONE", "PERF_ERR", "PERF_RD_BEATS", "PERF_WR_BEATS", "PERF_CQ_STALL",
        "PERF_BUSY1", "PERF_MEM_STALL")
#: The phases a run may list (``name[:count][:variant]`` in the ``phases`` option).
PHASES = ("reset", "pointers", "stream", "b2b", "irq", "halt", "cqfull", "limits", "flush")
CMD_FIELDS = ("cmd_m", "cmd_n", "cmd_k", "cmd_act", "cmd_wgt", "cmd_out", "cmd_es16", "cmd_relu", "cmd_pool",
              "cmd_mult", "cmd_shift")


# ---------------------------------------------------------------------------------------
# the kernels


@dataclass
class KTask:
    """A command one kernel took."""

    kernel: int
    fields: dict[str, int]
    cycle: int  # the take's cycle (cycle 0)
    planned: int  # busy cycles planned
    mem_err: bool
    busy: int = 0  # busy cycles driven so far
    aborted: bool = False
    status: int | None = None


class KernelModel:
    """One kernel (module docstring). ``drive()`` gives this cycle's outputs; ``edge()``
    applies what happened in the cycle at its closing edge."""

    def __init__(self, i: int, rng: np.random.Generator, busy_range: tuple[int, int],
                 window: tuple[int, int] | None, long_range: tuple[int, int] | None = None) -> None:
        self.i = i
        self.rng = rng
        self.busy_range = busy_range
        self.long_range = long_range  # one task in 6 this long (None: never)
        self.window = window
        self.state = "idle"
        self.task: KTask | None = None
        self.left = 0
        self.tasks: list[KTask] = []
        self.stall = False

    def drive(self) -> tuple[int, int, int, int, int, int]:
        """``(cmd_ready, busy, cpl_valid, status, cycles, stall)`` of this cycle."""
        if self.state == "idle":
            return 1, 0, 0, 0, 0, 0
        t = self.task
        assert t is not None
        if self.state == "busy":
            self.stall = bool(self.rng.random() < 0.25)
            return 0, 1, 0, 0, 0, int(self.stall)
        return 0, 0, 1, int(t.status or 0), t.busy, 0

    def _hits(self, f: dict[str, int]) -> bool:
        """One of the task's word ranges meets the error window (the memory answers
        ``rsp_err`` there)."""
        if self.window is None:
            return False
        lo, hi = self.window
        es = 2 if f["cmd_es16"] else 1
        rows = f["cmd_m"] // 2 if f["cmd_pool"] else f["cmd_m"]
        spans = ((f["cmd_act"], f["cmd_m"] * f["cmd_k"] * es // 4), (f["cmd_wgt"], f["cmd_k"] * f["cmd_n"] * es // 4),
                 (f["cmd_out"], rows * f["cmd_n"] * es // 4))
        return any(n > 0 and a < hi and lo < a + n for a, n in spans)

    def edge(self, take: bool, fields: dict[str, int] | None, cpl_ready: bool, abort: bool, cycle: int) -> KTask | None:
        """The closing edge of the cycle; returns the task whose completion was taken."""
        if self.state == "idle":
            if take:
                assert fields is not None
                lo, hi = self.busy_range
                if self.long_range is not None and self.rng.random() < 1 / 6:
                    lo, hi = self.long_range
                self.task = KTask(self.i, fields, cycle, int(self.rng.integers(lo, hi + 1)), self._hits(fields))
                self.tasks.append(self.task)
                self.left = self.task.planned
                if self.task.mem_err:  # an error response ends the task early
                    self.left = int(self.rng.integers(1, self.left + 1))
                self.state = "busy"
            return None
        t = self.task
        assert t is not None
        if self.state == "busy":
            t.busy += 1
            self.left -= 1
            if abort and not t.aborted:
                t.aborted = True
                self.left = min(self.left, int(self.rng.integers(0, 6)))
            if self.left <= 0:
                t.status = ST["ABORTED"] if t.aborted else ST["MEM_ERR"] if t.mem_err else ST["OK"]
                self.state = "done"
            return None
        if cpl_ready:
            self.state, self.task = "idle", None
            return t
        return None


# ---------------------------------------------------------------------------------------
# pins


class FrontBfm:
    """Every pin of ``host_front``, one cycle per :meth:`step` (module docstring)."""

    INPUTS = ("csr_we", "csr_addr", "csr_wdata", "csr_raddr", "cmd_ready", "k_busy", "cpl_valid", "cpl_status",
              "cpl_cycles", "rd_beat", "wr_beat", "k_stall")

    def __init__(self, dut: Any, record: dict[str, Any], p: HostParams, rng: np.random.Generator,
                 window: tuple[int, int] | None) -> None:
        self.dut = dut
        self.p = p
        self.rng = rng
        self.widths = {n: int(q["width"]) for n, q in record["ports"].items()}
        self.h = {n: getattr(dut, n) for n in record["ports"]}
        self.last: dict[str, int] = {}
        # a narrow exec-cycles counter: now and then a long task, up to past its wrap
        long = (16, p.cnt_mask + 24) if p.cnt_bits <= 10 else None
        self.kernels = [KernelModel(i, rng, (2, 16), window, long) for i in range(p.n_kernels)]
        self.cb = self.widths["cpl_cycles"] // p.n_kernels  # the DUT's cnt_bits
        self.cycle = 0
        self.problems: list[str] = []
        self.dispatches: list[KTask] = []  # every take, in order
        self.taken: list[KTask] = []  # completions the CQ took, in order
        self.en = 0  # CTRL.enable as registered
        self.cnt = dict.fromkeys(PERF, 0)  # what the counters must hold (PERF_DONE/ERR from the CQ reads)
        self.cq_occ = 0  # CQ occupancy from kernel completions and CQ_HEAD writes (exact without FE entries)
        self.stall_full = 0  # cycles a kernel completion waited and cq_occ == depth
        self.abort_cycles = 0
        self.both_busy = 0
        self.sr_written = False
        self.k_busy_now = 0
        self.abort_now = 0
        self.drive({n: 0 for n in self.INPUTS})

    # ---- pins
    def drive(self, values: dict[str, int]) -> None:
        for n, v in values.items():
            v = int(v) & ((1 << self.widths[n]) - 1)
            if self.last.get(n) != v:
                self.h[n].value = v
                self.last[n] = v

    def get(self, name: str) -> int:
        v = self.h[name].value
        if not v.is_resolvable:
            self.problem(f"{name} is {v}")
            return 0
        return int(v)

    def problem(self, msg: str) -> None:
        if len(self.problems) < 30:
            self.problems.append(f"cycle {self.cycle}: {msg}")

    # ---- one cycle
    async def step(self, we: tuple[int, int] | None = None, raddr: int | None = None,
                   sample: tuple[str, ...] = ()) -> dict[str, int]:
        """One cycle: the host's write ``(addr, data)`` and read address, the kernels'
        outputs; returns ``rdata`` (with ``raddr``) and the outputs named in ``sample``,
        read in this cycle."""
        await FallingEdge(self.dut.clk)
        self.cycle += 1
        nk = self.p.n_kernels
        ready = busy = cv = stall = st = cyc = 0
        for k in self.kernels:
            r, b, v, s, c, sl = k.drive()
            ready |= r << k.i
            busy |= b << k.i
            cv |= v << k.i
            stall |= sl << k.i
            st |= s << 4 * k.i
            cyc |= (c & ((1 << self.cb) - 1)) << self.cb * k.i  # the kernel's counter wraps
        any_busy = busy != 0
        self.k_busy_now = busy
        rd = int(any_busy and self.rng.random() < 0.4)
        wr = int(any_busy and self.rng.random() < 0.2)
        vals = {"cmd_ready": ready, "k_busy": busy, "cpl_valid": cv, "cpl_status": st, "cpl_cycles": cyc,
                "k_stall": stall, "rd_beat": rd, "wr_beat": wr, "csr_we": int(we is not None)}
        if we is not None:
            vals["csr_addr"], vals["csr_wdata"] = we[0], we[1] & M32
        if raddr is not None:
            vals["csr_raddr"] = raddr
        self.drive(vals)
        await Timer(1, "ns")
        out = {n: self.get(n) for n in sample}
        if raddr is not None:
            out["rdata"] = self.get("csr_rdata")
        cmdv, cplr, abort = self.get("cmd_valid"), self.get("cpl_ready"), self.get("k_abort")
        self.abort_now = abort
        if self.get("busy") != int(any_busy):
            self.problem(f"busy output {int(not any_busy)} with k_busy = {busy:#x}")
        # ---- the command handshake: one-hot, to the lowest ready kernel
        fields = None
        if cmdv:
            low = ready & -ready
            if cmdv & ~ready:
                self.problem(f"cmd_valid = {cmdv:#x} offers a command to a kernel that is not ready ({ready:#x})")
            elif cmdv != low:
                self.problem(f"cmd_valid = {cmdv:#x}: not the lowest idle kernel (cmd_ready = {ready:#x})")
            fields = {n: self.get(n) for n in CMD_FIELDS}
        # ---- the completion handshake: kernel 0 first
        if cv & 1 and cv & 2 and cplr & 2:
            self.problem("kernel 1's completion taken while kernel 0 offers one")
        if self.sr_written and not abort:
            self.problem("k_abort low in the cycle after a soft reset")
        # ---- the counters (this cycle's increments land at the closing edge)
        c = self.cnt
        c["PERF_BUSY"] += busy & 1
        c["PERF_BUSY1"] += busy >> 1 & 1
        c["PERF_TOTAL"] += self.en
        c["PERF_RD_BEATS"] += rd
        c["PERF_WR_BEATS"] += wr
        c["PERF_MEM_STALL"] += bin(stall).count("1")
        if cv and self.cq_occ == self.p.depth:
            self.stall_full += 1
        self.abort_cycles += abort
        if nk > 1 and busy == 3:
            self.both_busy += 1
        # ---- the kernels
        for k in self.kernels:
            took = bool(cmdv >> k.i & 1) and bool(ready >> k.i & 1)
            t = k.edge(took, fields if took else None, bool(cplr >> k.i & 1), bool(abort), self.cycle)
            if took:
                self.dispatches.append(k.task)
            if t is not None:
                self.taken.append(t)
                self.cq_occ += 1
        # ---- the host's write lands at this edge
        self.sr_written = False
        if we is not None:
            a, d = we
            if a == CSR["CTRL"]:
                self.en = d & CTRL_EN
                self.sr_written = bool(d & CTRL_SR)
            elif a == CSR["PERF_CTRL"] and d & 1:
                self.cnt = dict.fromkeys(PERF, 0)
                self.stall_full = 0
        return out

    def idle_kernels(self) -> bool:
        return all(k.state == "idle" for k in self.kernels)


# ---------------------------------------------------------------------------------------
# stimulus: descriptors


@dataclass
class Layout:
    """A phase's memory plan: the limits the CSRs hold and where tasks put their data.
    Activations in ``[0, split)``, results in ``[split, wgt_base)``, weights after."""

    mem_limit: int
    wgt_base: int
    wgt_size: int
    split: int

    @classmethod
    def make(cls, p: HostParams, rng: np.random.Generator, tight: bool = False) -> "Layout":
        mb = p.mem_bytes
        need = p.k_max * p.n_max * 2
        ml = mb if not tight else mb - 4 * int(rng.integers(1, mb // 64))
        ws = need + 4 * int(rng.integers(0, 65))
        wb = ml - ws - 4 * int(rng.integers(0, 65))
        split = (wb // 2) & ~3
        return cls(ml, wb, ws, split)


class DescGen:
    """Random descriptors of every class for the current layout; ``model`` (a
    :class:`FrontModel` of the generator's own) tracks EXP_SEQ as the front end will."""

    KINDS = ("ok", "ok", "ok", "ok", "nop", "magic", "checksum", "seq", "opcode", "dtype", "rsvd", "dims", "dims",
             "addr", "overlap", "wgt", "wgt", "memerr")

    def __init__(self, p: HostParams, rng: np.random.Generator, tag0: int, window: tuple[int, int]) -> None:
        self.p = p
        self.rng = rng
        self.tag = tag0
        self.window = window  # the kernels' error window (words): ``clean`` tasks stay out of it
        self.model = host.FrontModel(p, np.zeros(p.mem_bytes, np.uint8))
        self.lay = Layout.make(p, rng)

    def set_layout(self, lay: Layout) -> None:
        self.lay = lay
        self.model.wgt_base, self.model.wgt_size, self.model.mem_limit = lay.wgt_base, lay.wgt_size, lay.mem_limit

    def _int(self, lo: int, hi: int) -> int:
        """Uniform in [lo, hi]; ``lo`` when the range is empty (a second break applied to
        an already broken descriptor can empty it: the model still decides the status)."""
        return int(self.rng.integers(lo, hi + 1)) if hi >= lo else lo

    def good(self, irq: int | None = None, clean: bool = False) -> Descriptor:
        """An OK MATMUL for the layout; ``clean``: its results avoid the error window."""
        for _ in range(50):
            d = self._good(irq)
            o0, o1 = d.out_addr // 4, (d.out_addr + host.out_rows(d) * d.n * d.es) // 4
            if not clean or o1 <= self.window[0] or self.window[1] <= o0:
                return d
        return d

    def _good(self, irq: int | None) -> Descriptor:
        p, lay = self.p, self.lay
        dtype = self._int(0, 1)
        es, epw = (2, 2) if dtype else (1, 4)
        m = self._int(1, p.m_max)
        pool = int(m % 2 == 0 and self.rng.random() < 0.4)
        k = epw * self._int(1, p.k_max // epw)
        n = epw * self._int(1, p.n_max // epw)
        ab, ob, wbytes = m * k * es, (m // 2 if pool else m) * n * es, k * n * es
        act = 4 * self._int(0, (lay.split - ab) // 4)
        if self.rng.random() < 0.15 and act + ab + ob <= lay.wgt_base:
            out = act + ab  # touching the activations: no overlap
        elif self.rng.random() < 0.1:
            out = lay.wgt_base - ob  # touching the weight region
        else:
            out = lay.split + 4 * self._int(0, (lay.wgt_base - lay.split - ob) // 4)
        woff = 4 * self._int(0, (lay.wgt_size - wbytes) // 4)
        if self.rng.random() < 0.1:
            woff = lay.wgt_size - wbytes  # the weights end at the region's end
        return Descriptor(opcode=MATMUL, relu=self._int(0, 1), pool=pool, irq=self._int(0, 1) if irq is None else irq,
                          dtype=dtype, tag=0, m=m, n=n, k=k, shift=self._int(0, 31), act_addr=act, wgt_off=woff,
                          out_addr=out, mult=self._int(0, 0xFFFF))

    def mutate(self, d: Descriptor, kind: str) -> Descriptor:
        """``d`` broken in the way ``kind`` names (checksum last: it is computed on pack)."""
        p, lay, r = self.p, self.lay, self.rng
        es = d.es
        ab, ob = d.m * d.k * es, host.out_rows(d) * d.n * es
        if kind == "nop":
            return d.with_(opcode=NOP, m=self._int(0, 0xFFFF), act_addr=self._int(0, M32))
        if kind in ("magic", "checksum") and r.random() < 0.5:
            # an untrusted descriptor's seq is not consumed (EXP_SEQ + 1): a wrong one shows it
            d = d.with_(seq=(d.seq + self._int(1, 0xFFFF)) & 0xFFFF)
        if kind == "magic":
            return d.with_(magic=int(r.choice([x for x in range(256) if x != host.MAGIC])))
        if kind == "checksum":
            return d.with_(chk=host.checksum(d.words()) ^ self._int(1, 255))
        if kind == "seq":
            return d.with_(seq=(d.seq + self._int(1, 0xFFFF)) & 0xFFFF)
        if kind == "opcode":
            return d.with_(opcode=self._int(2, 15))
        if kind == "dtype":
            return d.with_(dtype=self._int(2, 3))
        if kind == "rsvd":
            which = self._int(0, 3)
            return d.with_(**[{"rsvd0_7": 1}, {"rsvd0_hi": self._int(1, 63)}, {"rsvd2": self._int(1, 0x7FF)},
                              {"rsvd6": self._int(1, 0xFFFF)}][which])
        if kind == "dims":
            epw = 4 // es
            opts = [{"m": 0}, {"m": self._int(p.m_max + 1, 0xFFFF)}, {"n": 0}, {"n": self._int(p.n_max + 1, 0xFFFF)},
                    {"k": 0}, {"k": self._int(p.k_max + 1, 0xFFFF)}, {"k": d.k - 1 if d.k > 1 else d.k + 1},
                    {"n": d.n - 1 if d.n > 1 else d.n + 1}]
            if p.m_max > 1:
                opts.append({"pool": 1, "m": 2 * self._int(0, (p.m_max - 1) // 2) + 1})
            if es == 1 and epw == 4:
                opts.append({"k": 4 * self._int(1, p.k_max // 4) - 2})  # int8: K a multiple of 2 only
            return d.with_(**opts[self._int(0, len(opts) - 1)])
        if kind == "addr":
            opts = [{"act_addr": d.act_addr + self._int(1, 3)}, {"out_addr": d.out_addr + self._int(1, 3)},
                    {"act_addr": lay.mem_limit - ab + 4}, {"act_addr": M32 - 3}, {"out_addr": lay.mem_limit - ob + 4},
                    {"out_addr": (M32 - 3) & ~3}]
            return d.with_(**opts[self._int(0, len(opts) - 1)])
        if kind == "overlap":  # the result range meets the activations or the weight region (edges often)
            if self.rng.random() < 0.5:
                lo, hi = d.act_addr - ob + 4, d.act_addr + ab - 4
            else:
                lo, hi = lay.wgt_base - ob + 4, lay.wgt_base + lay.wgt_size - 4
            out = int(self.rng.choice([lo, hi])) if self.rng.random() < 0.5 else 4 * self._int(lo // 4, hi // 4)
            return d.with_(out_addr=max(0, out))
        if kind == "memerr":  # a good task whose results meet the kernels' error window
            return d.with_(out_addr=4 * self.window[0] + 4 * self._int(-(ob // 4) + 1, 0))
        if kind == "wgt":
            wb = d.k * d.n * es
            opts = [{"wgt_off": d.wgt_off + self._int(1, 3)}, {"wgt_off": lay.wgt_size - wb + 4},
                    {"wgt_off": M32 - 3}]
            return d.with_(**opts[self._int(0, len(opts) - 1)])
        assert kind == "ok", kind
        return d

    def make(self, kinds: list[str] | None = None, irq: int | None = None, clean: bool = False) -> list[int]:
        """The next descriptor's words: a random class (or one of ``kinds``), sometimes
        two breaks at once; the tag is the run's next, the seq the expected one."""
        kind = str(self.rng.choice(kinds or self.KINDS))
        d = self.good(irq, clean).with_(tag=self.tag, seq=self.model.exp_seq)
        self.tag = (self.tag + 1) & 0xFFFF
        d = self.mutate(d, kind)
        if kind not in ("ok", "memerr") and not clean and self.rng.random() < 0.15:
            d = self.mutate(d, str(self.rng.choice(self.KINDS[4:-1])))
        words = d.words()
        self.model.submit(words)
        return words


# ---------------------------------------------------------------------------------------
# the host side


@dataclass
class Sub:
    """One submitted descriptor: its words, its absolute SQ position, the doorbell's
    cycle, and whether the flush must / may take it (``flush``: None, "may", "must")."""

    words: list[int]
    pos: int
    cycle: int = 0
    flush: str | None = None  # also "after": submitted after the flush ended (its errors set err_sticky)

    @property
    def tag(self) -> int:
        return self.words[0] >> 16

    @property
    def desc(self) -> Descriptor:
        return Descriptor.unpack(self.words)


@dataclass
class PhaseObs:
    """What one phase did on the DUT."""

    name: str
    layout: Layout | None = None
    subs: list[Sub] = field(default_factory=list)
    cq: list[Completion] = field(default_factory=list)
    dispatches: list[KTask] = field(default_factory=list)
    taken: list[KTask] = field(default_factory=list)
    checks: list[tuple[str, int, int]] = field(default_factory=list)
    end: dict[str, int] = field(default_factory=dict)  # registers read at the quiet end
    counters: dict[str, int] = field(default_factory=dict)  # what the BFM drove since the last clear
    cycles: int = 0
    samples: list[tuple[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    flush_sticky: int | None = None  # STATUS.err_sticky once a flush phase is quiet


class Host:
    """The host's CSR traffic (module docstring); ``obs`` collects the phase."""

    def __init__(self, bfm: FrontBfm, p: HostParams, gen: DescGen) -> None:
        self.bfm, self.p, self.gen = bfm, p, gen
        self.tail = 0  # SQ_TAIL as written
        self.head = 0  # SQ_HEAD as last read
        self.pos = 0  # absolute SQ position of the next submission
        self.cq_head = 0  # CQ_HEAD as written
        self.ctrl = 0
        self.last_doorbell = -10
        self.obs = PhaseObs("none")
        self.pending: dict[int, Sub] = {}  # tag -> submitted, not yet completed
        self.irq_expect = 0  # IRQ_STATUS bits expected since the last W1C of all bits

    @property
    def ptr_mod(self) -> int:
        return 2 * self.p.depth

    # ---- CSR access
    async def write(self, addr: int, data: int) -> None:
        await self.bfm.step(we=(addr, data))
        if addr == CSR["CTRL"]:
            self.ctrl = data & (CTRL_EN | CTRL_IRQ | CTRL_HOE)

    async def read(self, addr: int, sample: tuple[str, ...] = ()) -> int:
        out = await self.bfm.step(raddr=addr, sample=sample)
        if addr == CSR["SQ_HEAD"]:
            self.head = out["rdata"]
            self.obs.samples.append(("sq_occ", (self.tail - self.head) % self.ptr_mod))
        if addr == CSR["STATUS"]:
            self.obs.samples.append(("cq_full", "full" if out["rdata"] & S_CQ_FULL else "not_full"))
            kb = self.bfm.k_busy_now
            self.expect("STATUS busy and kernel busy bits = k_busy", out["rdata"] & (S_BUSY | 3 << S_KBUSY),
                        int(kb != 0) | kb << S_KBUSY)
            self.expect("STATUS.flushing = k_abort", int(bool(out["rdata"] & S_FLUSHING)), self.bfm.abort_now)
        if addr == CSR["IRQ_STATUS"]:
            for b, name in enumerate(("cpl", "err", "doorbell_overflow", "write_to_owned_slot", "cq_head_overflow")):
                if out["rdata"] >> b & 1:
                    self.obs.samples.append(("irq", name))
        self._last = out
        return out["rdata"]

    async def idle(self, n: int) -> None:
        for _ in range(n):
            await self.bfm.step()

    def expect(self, what: str, got: int, want: int) -> None:
        self.obs.checks.append((what, int(got), int(want)))

    # ---- SQ
    def free(self) -> int:
        return self.p.depth - (self.tail - self.head) % self.ptr_mod

    async def put(self, words: list[int], order: list[int] | None = None) -> Sub:
        """Write one descriptor into the slot at the tail (+ the slots already written
        but not rung: ``self.staged``)."""
        slot = (self.tail + len(self.staged)) % self.p.depth
        for w in order or range(8):
            await self.write(SQ_BASE + SQ_SLOT * slot + 4 * w, words[w])
        sub = Sub(list(words), self.pos + len(self.staged))
        self.staged.append(sub)
        return sub

    staged: list[Sub]

    async def ring(self, n: int | None = None) -> None:
        """The doorbell for ``n`` (default all) staged descriptors."""
        n = len(self.staged) if n is None else n
        rung, self.staged = self.staged[:n], self.staged[n:]
        self.tail = (self.tail + n) % self.ptr_mod
        cyc = self.bfm.cycle + 1
        self.obs.samples.append(("doorbell", "back_to_back" if cyc - self.last_doorbell == 1 else "spaced"))
        self.last_doorbell = cyc
        await self.write(CSR["SQ_TAIL"], self.tail)
        for s in rung:
            s.cycle = cyc
            self.obs.subs.append(s)
            self.pending[s.tag] = s
        self.pos += n

    async def wait_free(self, n: int, budget: int = 4000) -> None:
        """Read SQ_HEAD (draining the CQ) until ``n`` slots are free."""
        for _ in range(budget):
            await self.read(CSR["SQ_HEAD"])
            if self.free() - len(self.staged) >= n:
                return
            await self.drain()
        raise AssertionError(f"cycle {self.bfm.cycle}: no room for {n} descriptors in the SQ")

    async def submit(self, words_list: list[list[int]], batch: int = 1) -> None:
        """Submit descriptors, ``batch`` per doorbell."""
        i = 0
        while i < len(words_list):
            b = min(batch, len(words_list) - i, self.p.depth)
            if self.free() - len(self.staged) < b:
                await self.wait_free(b)
            order = list(self.gen.rng.permutation(8)) if self.gen.rng.random() < 0.3 else None
            for w in words_list[i:i + b]:
                await self.put(w, order)
            if b > 1 and self.gen.rng.random() < 0.3:
                for _ in range(b):  # one doorbell per descriptor, back to back
                    await self.ring(1)
            else:
                await self.ring()
            i += b

    # ---- CQ
    async def drain(self, most: int | None = None) -> int:
        """Read CQ_TAIL, then up to ``most`` entries (both words), then write CQ_HEAD."""
        tail = await self.read(CSR["CQ_TAIL"], sample=("cq_nonempty",))
        self.expect("cq_nonempty = (CQ_TAIL != CQ_HEAD)", self._last["cq_nonempty"], int(tail != self.cq_head))
        n = (tail - self.cq_head) % self.ptr_mod
        if most is not None:
            n = min(n, most)
        for j in range(n):
            s = (self.cq_head + j) % self.p.depth
            w0 = await self.read(CQ_BASE + CQ_SLOT * s)
            w1 = await self.read(CQ_BASE + CQ_SLOT * s + 4)
            try:
                c = Completion.unpack([w0, w1])
            except ValueError as exc:
                self.obs.problems.append(f"CQ slot {s}: {exc}")
                c = Completion(w0 & 0xFFFF, w0 >> 16 & 0xF, w0 >> 20 & 0xF, w1)
            self.obs.cq.append(c)
            self.obs.samples.append(("status", HostParams.STATUS[c.status] if c.status < 12 else "reserved"))
            self.obs.samples.append(("kernel", c.kernel))
            sub = self.pending.pop(c.tag, None)
            if sub is not None and sub.desc.irq:
                self.irq_expect |= IRQ_CPL
            if c.status != ST["OK"]:
                self.irq_expect |= IRQ_ERR
            self.bfm.cnt["PERF_DONE" if c.status == ST["OK"] else "PERF_ERR"] += 1
        if n:  # the first address past the CQ slots reads 0 right after their entries (a CQ window
            # one slot too wide, or a read mux that kept its last value, would show one)
            self.expect("read just past the CQ slots", await self.read(CQ_BASE + CQ_SLOT * self.p.depth), 0)
            self.cq_head = (self.cq_head + n) % self.ptr_mod
            await self.write(CSR["CQ_HEAD"], self.cq_head)
            self.bfm.cq_occ -= n
        return n

    async def quiesce(self) -> None:
        """Drain until every submission completed, the kernels are idle and the SQ/CQ are
        empty; STATUS then shows empty queues, no busy kernel, no flush."""
        start = self.bfm.cycle
        budget = 2000 + 300 * len(self.pending)
        while self.pending or not self.bfm.idle_kernels():
            if self.bfm.cycle - start > budget:
                raise AssertionError(f"cycle {self.bfm.cycle}: {len(self.pending)} submission(s) never completed "
                                     f"(tags {sorted(self.pending)[:8]})")
            if not await self.drain():
                await self.idle(int(self.gen.rng.integers(1, 6)))
        st = await self.read(CSR["STATUS"])
        self.expect("STATUS at quiet: sq_empty, cq_empty, no busy/flushing", st & (
            S_SQ_EMPTY | S_CQ_EMPTY | S_BUSY | S_FLUSHING | S_SQ_FULL | S_CQ_FULL | 3 << S_KBUSY),
            S_SQ_EMPTY | S_CQ_EMPTY)

    # ---- phase bracket
    async def begin(self, name: str, layout: Layout | None = None, clear: bool = True) -> None:
        self.obs = PhaseObs(name)
        self.staged = []
        self._c0 = self.bfm.cycle
        self.bfm.dispatches, self.bfm.taken = [], []
        self.bfm.cq_occ = 0  # quiet: the CQ is empty
        if layout is not None:
            self.gen.set_layout(layout)
            self.obs.layout = layout
            await self.write(CSR["WGT_BASE"], layout.wgt_base)
            await self.write(CSR["WGT_SIZE"], layout.wgt_size)
            await self.write(CSR["MEM_LIMIT"], layout.mem_limit)
        if clear:
            await self.write(CSR["PERF_CTRL"], 1)
        await self.write(CSR["IRQ_STATUS"], 0x1F)
        self.irq_expect = 0

    async def finish(self) -> PhaseObs:
        """Quiesce and read the end-of-phase registers."""
        await self.quiesce()
        o = self.obs
        o.counters = dict(self.bfm.cnt)
        for n in PERF + ("EXP_SEQ", "SQ_HEAD", "SQ_TAIL", "CQ_HEAD", "CQ_TAIL"):
            o.end[n] = await self.read(CSR[n])
            if n == "PERF_TOTAL":
                o.counters[n] = self.bfm.cnt[n] - self.bfm.en  # this read's cycle counts at its end
        o.end["IRQ_STATUS"] = await self.read(CSR["IRQ_STATUS"], sample=("irq",))
        self.expect("irq = CTRL.irq_en and IRQ_STATUS != 0", self._last["irq"],
                    int(bool(self.ctrl & CTRL_IRQ) and o.end["IRQ_STATUS"] != 0))
        o.dispatches, o.taken = list(self.bfm.dispatches), list(self.bfm.taken)
        o.cycles = self.bfm.cycle - self._c0
        o.problems += self.bfm.problems
        self.bfm.problems = []
        o.end["irq_expect"] = self.irq_expect
        return o


# ---------------------------------------------------------------------------------------
# the phases


@dataclass
class Phase:
    """One sequence item: a phase name and its options."""

    name: str
    n: int = 0
    variant: str = ""

    def __repr__(self) -> str:
        return f"{self.name}({self.n}{', ' + self.variant if self.variant else ''})"


class Phases:
    """The phases of the module docstring, run on a :class:`Host`."""

    def __init__(self, h: Host, p: HostParams, rng: np.random.Generator) -> None:
        self.h, self.p, self.rng = h, p, rng
        self.flushes = 0

    async def run(self, ph: Phase) -> PhaseObs:
        return await getattr(self, f"ph_{ph.name}")(ph)

    # ---- reset values, RO registers, unmapped addresses
    async def ph_reset(self, ph: Phase) -> PhaseObs:
        h, p = self.h, self.p
        await h.begin("reset", clear=False)
        want = {n: 0 for n in CSR}
        want.update(ID=ID_VALUE, STATUS=S_SQ_EMPTY | S_CQ_EMPTY, MEM_LIMIT=p.mem_bytes, HW_CFG=host.hw_cfg(p))
        unmapped = [0x05C, 0x060, 0x3FC, 0x002, 0x005, SQ_BASE + SQ_SLOT * p.depth if p.depth < 32 else 0x9FC,
                    CQ_BASE + CQ_SLOT * p.depth, 0xFFC, 0xC00]
        ro = ["ID", "STATUS", "SQ_HEAD", "CQ_TAIL", "HW_CFG", "EXP_SEQ"] + [n for n in PERF]

        async def read_all(when: str) -> None:
            for n, a in CSR.items():
                got = await h.read(a)
                if n == "PERF_TOTAL":
                    continue  # enable is 0: checked below
                h.expect(f"{when}: {n}", got, want[n])
            for a in unmapped + [SQ_BASE, SQ_BASE + 4 * 7, CQ_BASE, CQ_BASE + 4, CQ_BASE + CQ_SLOT * (p.depth - 1) + 4]:
                await h.read(CSR["ID"])  # a non-zero read first: a read mux that kept it would show it
                h.expect(f"{when}: read of {a:#05x}", await h.read(a), 0)

        await read_all("after rst")
        garbage = int(self.rng.integers(1, M32))
        for n in ro:
            await h.write(CSR[n], garbage)
        for a in unmapped + [CQ_BASE, CQ_BASE + 4]:
            await h.write(a, garbage)
        await read_all("after writes to RO/unmapped addresses")
        # writable registers read back
        await h.write(CSR["WGT_BASE"], M32)
        h.expect("WGT_BASE bits [1:0] read 0", await h.read(CSR["WGT_BASE"]), M32 & ~3)
        await h.write(CSR["WGT_SIZE"], garbage)
        h.expect("WGT_SIZE read back", await h.read(CSR["WGT_SIZE"]), garbage)
        for v in (p.mem_bytes + 1, M32, p.mem_bytes, 100, p.mem_bytes - 4):
            await h.write(CSR["MEM_LIMIT"], v)
            h.expect(f"MEM_LIMIT after writing {v:#x}", await h.read(CSR["MEM_LIMIT"]), min(v, p.mem_bytes))
        await h.write(CSR["CTRL"], CTRL_IRQ | CTRL_HOE)
        h.expect("CTRL read back (irq_en, halt_on_error)", await h.read(CSR["CTRL"]), CTRL_IRQ | CTRL_HOE)
        await h.write(CSR["CTRL"], CTRL_RES)
        h.expect("CTRL resume reads 0", await h.read(CSR["CTRL"]), 0)
        # an empty flush: flushing for one cycle
        await h.write(CSR["CTRL"], CTRL_SR)
        h.expect("STATUS.flushing the cycle after soft_reset", await h.read(CSR["STATUS"]) & S_FLUSHING, S_FLUSHING)
        h.expect("CTRL soft_reset reads 0", await h.read(CSR["CTRL"]), 0)
        h.expect("STATUS.flushing ends (empty SQ, idle kernels)", await h.read(CSR["STATUS"]) & S_FLUSHING, 0)
        # PERF_TOTAL counts cycles with enable
        await h.write(CSR["PERF_CTRL"], 1)
        await h.write(CSR["CTRL"], CTRL_EN)
        await h.idle(5)
        h.expect("PERF_TOTAL after 5 cycles with enable", await h.read(CSR["PERF_TOTAL"]), 5)
        await h.write(CSR["CTRL"], 0)  # its own cycle still counts
        await h.idle(3)
        h.expect("PERF_TOTAL holds with enable off", await h.read(CSR["PERF_TOTAL"]), 7)
        await h.write(CSR["PERF_CTRL"], 1)
        h.expect("PERF_TOTAL cleared by PERF_CTRL", await h.read(CSR["PERF_TOTAL"]), 0)
        h.expect("PERF_CTRL reads 0", await h.read(CSR["PERF_CTRL"]), 0)
        if h.pos == 0:  # the run's first phase: a doorbell over slot 0 as the reset left it
            await h.write(CSR["CTRL"], CTRL_EN)
            zero = [0] * 8  # never written: all-zero words, BAD_MAGIC with tag 0
            h.staged.append(Sub(zero, h.pos))
            h.gen.model.submit(zero)
            await h.ring()
        return await h.finish()

    # ---- pointer rules with the head frozen (enable off)
    async def ph_pointers(self, ph: Phase) -> PhaseObs:
        h, p, d = self.h, self.p, self.p.depth
        await h.begin("pointers", Layout.make(p, self.rng))
        await h.write(CSR["CTRL"], CTRL_IRQ)  # irq_en, fetching off
        head = await h.read(CSR["SQ_HEAD"])
        words = [h.gen.make() for _ in range(d)]
        for w in words[:-1]:
            await h.put(w)
        await h.ring()
        await h.read(CSR["SQ_HEAD"])  # occupancy sample: depth - 1
        await h.put(words[-1])
        await h.ring()
        h.expect("SQ_TAIL after filling", await h.read(CSR["SQ_TAIL"]), (head + d) % (2 * d))
        st = await h.read(CSR["STATUS"])
        h.expect("STATUS.sq_full", st & (S_SQ_FULL | S_SQ_EMPTY), S_SQ_FULL)
        await h.read(CSR["SQ_HEAD"])  # occupancy sample: depth
        # neither a write just past the SQ slots (unmapped, not slot 0) nor a doorbell
        # repeating the tail (occupancy unchanged: taken) is flagged
        if p.depth < 32:
            await h.write(SQ_BASE + SQ_SLOT * d, int(self.rng.integers(0, M32)))
        await h.write(CSR["SQ_TAIL"], h.tail)
        h.expect("IRQ_STATUS before the bad writes", await h.read(CSR["IRQ_STATUS"], ("irq",)), 0)
        h.expect("irq low with IRQ_STATUS 0", h._last["irq"], 0)
        # doorbell overflow: one past full, and backwards
        for bad in ((h.tail + 1) % (2 * d), (h.tail - 1) % (2 * d)):
            await h.write(CSR["SQ_TAIL"], bad)
            h.expect(f"SQ_TAIL unchanged after the doorbell {bad}", await h.read(CSR["SQ_TAIL"]), h.tail)
            h.expect("doorbell_overflow set", await h.read(CSR["IRQ_STATUS"], ("irq",)), IRQ_DBO)
            h.expect("irq with irq_en", h._last["irq"], 1)
            await h.write(CSR["IRQ_STATUS"], IRQ_DBO)
        # a write into an owned slot (every slot: the SQ is full), which would break its descriptor
        slot = int(self.rng.integers(0, d))
        await h.write(SQ_BASE + SQ_SLOT * slot + 4 * 7, 0)
        h.expect("write_to_owned_slot set", await h.read(CSR["IRQ_STATUS"]), IRQ_OWN)
        # CQ_HEAD beyond the (empty) CQ
        await h.write(CSR["CQ_HEAD"], (h.cq_head + 1) % (2 * d))
        h.expect("CQ_HEAD unchanged", await h.read(CSR["CQ_HEAD"]), h.cq_head)
        h.expect("cq_head_overflow set", await h.read(CSR["IRQ_STATUS"]), IRQ_OWN | IRQ_CQH)
        # W1C: one bit, then the other; a write of 0 changes nothing
        await h.write(CSR["IRQ_STATUS"], 0)
        h.expect("W1C of 0", await h.read(CSR["IRQ_STATUS"]), IRQ_OWN | IRQ_CQH)
        await h.write(CSR["IRQ_STATUS"], IRQ_OWN)
        h.expect("W1C write_to_owned_slot", await h.read(CSR["IRQ_STATUS"]), IRQ_CQH)
        await h.write(CSR["CTRL"], 0)
        h.expect("irq low with irq_en off", (await h.read(CSR["IRQ_STATUS"], ("irq",)), h._last["irq"])[1], 0)
        await h.write(CSR["IRQ_STATUS"], 0x1F)
        h.expect("W1C all", await h.read(CSR["IRQ_STATUS"]), 0)
        h.expect("SQ_HEAD unchanged with enable off", await h.read(CSR["SQ_HEAD"]), head)
        # now fetch: everything completes as written (the owned-slot write was ignored)
        await h.write(CSR["CTRL"], CTRL_EN)
        return await h.finish()

    # ---- random stream
    async def ph_stream(self, ph: Phase, name: str = "stream", kinds: list[str] | None = None,
                        layout: Layout | None = None) -> PhaseObs:
        h, p, r = self.h, self.p, self.rng
        await h.begin(name, layout or Layout.make(p, r), clear=bool(r.random() < 0.7))
        await h.write(CSR["CTRL"], CTRL_EN | (CTRL_IRQ if r.random() < 0.5 else 0))
        left = ph.n
        lazy = r.random() < 0.5  # let the CQ fill now and then
        while left:
            act = r.random()
            if act < 0.55:
                b = min(left, int(r.integers(1, p.depth + 1)))
                words = [h.gen.make(kinds) for _ in range(b)]
                await h.submit(words, batch=int(r.integers(1, b + 1)))
                left -= b
            elif act < 0.8 and not lazy:
                await h.drain(None if r.random() < 0.6 else int(r.integers(1, 4)))
            elif act < 0.86:
                await h.drain(int(r.integers(1, 3)))
            elif act < 0.9 and (h.tail - h.head) % h.ptr_mod:
                # a write into a slot the host handed over (owned unless the head passed it
                # meanwhile): ignored, or harmless in a free slot; the statuses show which
                k = int(r.integers(0, (h.tail - h.head) % h.ptr_mod))
                slot = (h.head + k) % p.depth
                await h.write(SQ_BASE + SQ_SLOT * slot + 4 * int(r.integers(0, 8)), int(r.integers(0, M32)))
            else:
                await h.idle(int(r.integers(1, 30)))
        return await h.finish()

    async def ph_limits(self, ph: Phase) -> PhaseObs:
        """A tight MEM_LIMIT, and a weight region past it (every MATMUL that passes the
        earlier checks fails WGT_RANGE)."""
        lay = Layout.make(self.p, self.rng, tight=True)
        if ph.variant == "wgt_beyond":
            lay = Layout(lay.mem_limit, lay.wgt_base, lay.mem_limit - lay.wgt_base + 4 * int(self.rng.integers(1, 9)),
                         lay.split)
        return await self.ph_stream(ph, "limits", layout=lay)

    # ---- back-to-back doorbells
    async def ph_b2b(self, ph: Phase) -> PhaseObs:
        h, p = self.h, self.p
        await h.begin("b2b", Layout.make(p, self.rng))
        await h.write(CSR["CTRL"], CTRL_EN)
        for _ in range(ph.n):
            k = int(self.rng.integers(2, min(4, p.depth) + 1))
            await h.wait_free(k)
            for _ in range(k):
                await h.put(h.gen.make())
            for _ in range(k):
                await h.ring(1)
            if self.rng.random() < 0.5:
                await h.drain()
        return await h.finish()

    # ---- IRQ bits per descriptor
    async def ph_irq(self, ph: Phase) -> PhaseObs:
        h, p = self.h, self.p
        await h.begin("irq", Layout.make(p, self.rng))
        # with two kernels, each case once more behind a task that holds kernel 0: the
        # descriptor's IRQ bit then travels with kernel 1's completion
        leads = (False, True) if p.n_kernels > 1 else (False,)
        for ctrl, lead in ((c, ld) for c in (CTRL_EN | CTRL_IRQ, CTRL_EN) for ld in leads):
            await h.write(CSR["CTRL"], ctrl)
            for kinds, irq in ((["ok"], 0), (["ok"], 1), (["nop"], 0), (["nop"], 1), (["dims", "magic", "rsvd"], 0),
                               (["addr", "opcode"], 1)):
                await h.write(CSR["IRQ_STATUS"], 0x1F)
                h.irq_expect = 0
                await h.submit(([h.gen.make(["ok"], irq=0)] if lead else []) + [h.gen.make(kinds, irq=irq)])
                await h.quiesce()
                got = await h.read(CSR["IRQ_STATUS"], ("irq",))
                h.expect(f"IRQ_STATUS after one {kinds[0]} with irq_en={irq} (CTRL {ctrl:#x})", got, h.irq_expect)
                h.expect("irq = CTRL.irq_en and IRQ_STATUS != 0", h._last["irq"],
                         int(bool(ctrl & CTRL_IRQ) and got != 0))
        return await h.finish()

    # ---- halt on error, resume
    async def ph_halt(self, ph: Phase) -> PhaseObs:
        h, p = self.h, self.p
        await h.begin("halt", Layout.make(p, self.rng))
        for _ in range(ph.n):
            await h.write(CSR["CTRL"], CTRL_EN | CTRL_HOE)
            nb = int(self.rng.integers(0, min(3, p.depth - 1)))
            na = int(self.rng.integers(1, p.depth - nb))
            before = [h.gen.make(["ok", "nop"], clean=True) for _ in range(nb)]
            bad = h.gen.make(["magic", "seq", "dims", "addr", "wgt", "opcode"], clean=True)
            after = [h.gen.make(["ok", "nop", "ok"], clean=True) for _ in range(na)]
            await h.wait_free(len(before) + 1 + len(after))
            for w in before + [bad] + after:
                await h.put(w)
            await h.ring()
            n_done = len(before) + 1
            bad_pos = h.pos - len(after) - 1
            for _ in range(400):
                st = await h.read(CSR["STATUS"])
                if st & S_HALTED:
                    break
                await h.idle(3)
            h.expect("STATUS.halted and err_sticky after the error", st & (S_HALTED | S_ERR), S_HALTED | S_ERR)
            await h.write(CSR["IRQ_STATUS"], IRQ_CQH)  # bit 4 (CTRL's resume) written elsewhere: still halted
            got = 0
            for _ in range(50):
                got += await h.drain()
                if got >= n_done:
                    break
            n_disp = len(h.bfm.dispatches)
            await h.idle(int(self.rng.integers(20, 40)))
            h.expect("completions while halted", got, n_done)
            h.expect("SQ_HEAD stays after the error", (await h.read(CSR["SQ_HEAD"]) - bad_pos - 1) % (2 * p.depth),
                     0)
            h.expect("no dispatch while halted", len(h.bfm.dispatches), n_disp)
            await h.write(CSR["CTRL"], CTRL_EN | CTRL_HOE | CTRL_RES)
            h.expect("resume clears halted", await h.read(CSR["STATUS"]) & S_HALTED, 0)
            await h.quiesce()
        await h.write(CSR["CTRL"], CTRL_EN)
        return await h.finish()

    # ---- the CQ full
    async def ph_cqfull(self, ph: Phase) -> PhaseObs:
        h, p, d = self.h, self.p, self.p.depth
        await h.begin("cqfull", Layout.make(p, self.rng))
        await h.write(CSR["CTRL"], CTRL_EN)
        # kernel tasks only: the CQ fills, then every kernel holds a completion
        n = d + p.n_kernels + int(self.rng.integers(1, d + 1))
        words = [h.gen.make(["ok"]) for _ in range(n)]
        base = h.bfm.stall_full  # before the read's cycle: the read sees the counts of earlier cycles
        s0 = await h.read(CSR["PERF_CQ_STALL"])
        sent = 0
        while sent < n:
            await h.read(CSR["SQ_HEAD"])
            b = min(n - sent, h.free())
            if b:
                await h.submit(words[sent:sent + b], batch=b)
                sent += b
            else:
                await h.idle(4)
            if h.bfm.cq_occ >= d and all(k.state == "done" for k in h.bfm.kernels):
                break
        for _ in range(600):
            if h.bfm.cq_occ >= d and all(k.state == "done" for k in h.bfm.kernels):
                break
            await h.idle(2)
        st = await h.read(CSR["STATUS"])
        h.expect("STATUS.cq_full with the host not reading", st & S_CQ_FULL, S_CQ_FULL)
        await h.idle(int(self.rng.integers(10, 30)))
        top = h.bfm.stall_full
        s1 = await h.read(CSR["PERF_CQ_STALL"])
        h.expect("PERF_CQ_STALL grows by the cycles a kernel completion waited on the full CQ (modulo 2**cnt_bits)",
                 (s1 - s0) & p.cnt_mask, (top - base) & p.cnt_mask)
        h.obs.samples.append(("cqfull", "kernels"))
        if sent < n:
            await h.submit(words[sent:], batch=1)
        await h.quiesce()
        # a front-end completion waiting on the full CQ: NOPs, the host not reading
        await h.read(CSR["SQ_HEAD"])
        m = min(d, h.free())
        await h.submit([h.gen.make(["nop"]) for _ in range(m)], batch=m)
        for _ in range(200):
            if await h.read(CSR["CQ_TAIL"]) == (h.cq_head + d) % (2 * d):
                break
        await h.submit([h.gen.make(["nop", "dims"])])
        await h.idle(2)
        a = await h.read(CSR["PERF_CQ_STALL"])
        k = int(self.rng.integers(5, 20))
        await h.idle(k)
        b = await h.read(CSR["PERF_CQ_STALL"])
        h.expect("PERF_CQ_STALL counts a front-end completion waiting on the full CQ (modulo 2**cnt_bits)",
                 (b - a) & p.cnt_mask, (k + 1) & p.cnt_mask)
        h.obs.samples.append(("cqfull", "front_end"))
        o = await h.finish()
        await h.write(CSR["PERF_CTRL"], 1)
        h.expect("PERF_CTRL clears PERF_CQ_STALL (quiet: nothing stalls)", await h.read(CSR["PERF_CQ_STALL"]), 0)
        return o

    # ---- soft reset = flush
    async def ph_flush(self, ph: Phase) -> PhaseObs:
        h, p, d, r = self.h, self.p, self.p.depth, self.rng
        await h.begin("flush", Layout.make(p, r))
        hoe = r.random() < 0.2  # an error then halts: the flush also ends a halt
        await h.write(CSR["CTRL"], CTRL_EN | (CTRL_HOE if hoe else 0))
        for k in h.bfm.kernels:
            k.busy_range = (20, 60)  # tasks in flight when the flush comes
        cq_full = ph.variant == "cqfull"
        if cq_full:  # fill the CQ with NOP completions the host leaves unread
            await h.submit([h.gen.make(["nop"]) for _ in range(d)], batch=d)
            for _ in range(200):
                if await h.read(CSR["CQ_TAIL"]) == (h.cq_head + d) % (2 * d):
                    break
        await h.read(CSR["SQ_HEAD"])
        self.flushes += 1  # odd flushes leave a slot for submissions during the flush, even ones fill the SQ
        room = h.free() - 1 if self.flushes % 2 else h.free()
        n = max(1, min(room, p.n_kernels + int(r.integers(1, d + 1))))
        kinds = ["ok"] * 6 + ["nop", "magic", "dims", "seq", "addr"]
        first_ok = [h.gen.make(["ok"], clean=True)] if not hoe else []  # a task in flight at the soft reset
        await h.submit(first_ok + [h.gen.make(kinds) for _ in range(n - len(first_ok))], batch=n)
        for _ in range(100):  # until the kernels are busy (or one is and the head waits), or the SQ is empty
            states = [k.state for k in h.bfm.kernels]
            if "idle" not in states or ("busy" in states and r.random() < 0.2):
                break
            if await h.read(CSR["SQ_HEAD"]) == h.tail:
                break
        # descriptors for "during the flush", written now into free slots, rung after the soft reset
        during = [await h.put(h.gen.make()) for _ in range(min(h.free(), int(r.integers(1, 3))))]
        await h.idle(int(r.integers(0, 4)))
        # the soft reset; SQ_HEAD read in the same cycle (the head may still leave at this edge)
        out = await h.bfm.step(we=(CSR["CTRL"], CTRL_EN | CTRL_SR), raddr=CSR["SQ_HEAD"])
        h.ctrl = CTRL_EN
        head0 = h.head = out["rdata"]
        in_sq = (h.tail - head0) % (2 * d)
        busy = sum(k.state == "busy" for k in h.bfm.kernels)
        h.obs.samples += [("flush", "in_flight")] * bool(busy) + [("flush", "queued")] * bool(in_sq)
        if cq_full:
            h.obs.samples.append(("flush", "cq_full"))
        first = h.pos - in_sq  # absolute position of the head at the soft reset
        for s in h.obs.subs:
            if s.pos == first:
                s.flush = "may"
            elif s.pos > first:
                s.flush = "must"
        # the next cycle: STATUS, and the doorbell of the descriptors written before
        tail = (h.tail + len(during)) % (2 * d)
        out = await h.bfm.step(we=(CSR["SQ_TAIL"], tail) if during else None, raddr=CSR["STATUS"])
        h.expect("STATUS.flushing after soft_reset, halted and err_sticky clear",
                 out["rdata"] & (S_FLUSHING | S_HALTED | S_ERR), S_FLUSHING)
        if during:
            # still flushing in the next cycle: the flush saw them (a flush ending at the
            # doorbell's edge would not)
            fl = bool(await h.read(CSR["STATUS"]) & S_FLUSHING)
            h.staged, h.tail = [], tail
            for s in during:
                s.cycle = h.bfm.cycle - 1
                s.flush = "must" if fl else "after"
                h.obs.subs.append(s)
                h.pending[s.tag] = s
            h.pos += len(during)
            if fl:
                h.obs.samples.append(("flush", "during"))
        for k in h.bfm.kernels:
            k.busy_range = (2, 16)
        await h.quiesce()
        st = await h.read(CSR["STATUS"])
        h.expect("after the flush: not flushing, not halted", st & (S_FLUSHING | S_HALTED), 0)
        h.obs.flush_sticky = int(bool(st & S_ERR))  # an error after the flush ended sets it again
        h.expect("SQ_HEAD = SQ_TAIL = the tail written (not zeroed)", await h.read(CSR["SQ_HEAD"]), h.tail)
        h.expect("CQ_TAIL = CQ_HEAD written", await h.read(CSR["CQ_TAIL"]), h.cq_head)
        h.gen.model.exp_seq = await h.read(CSR["EXP_SEQ"])  # stimulus only: the scoreboard checks EXP_SEQ
        await h.write(CSR["CTRL"], CTRL_EN)
        # new submissions work
        await h.submit([h.gen.make() for _ in range(int(r.integers(2, d + 2)))], batch=2)
        return await h.finish()


# ---------------------------------------------------------------------------------------
# pyuvm components


class FrontDriver(uvm_driver):
    def build_phase(self) -> None:
        self.ap = uvm_analysis_port("ap", self)

    def connect_phase(self) -> None:
        self.phases: Phases = ConfigDB().get(self, "", "PHASES")
        self.broken = False

    async def run_phase(self) -> None:
        while True:
            it = await self.seq_item_port.get_next_item()
            if not self.broken:
                try:
                    obs = await self.phases.run(it.obj)
                except AssertionError as exc:  # the DUT stopped doing what a phase waits for
                    obs = self.phases.h.obs
                    obs.problems += self.phases.h.bfm.problems + [f"phase abandoned: {exc}"]
                    self.broken = True  # the DUT's state is unknown: skip the remaining phases
                self.ap.write((it.obj, obs))
            self.seq_item_port.item_done()


class FrontScoreboard(uvm_subscriber):
    """Every phase against :class:`FrontModel` (module docstring)."""

    def build_phase(self) -> None:
        self.p: HostParams = ConfigDB().get(self, "", "PARAMS")
        window = ConfigDB().get(self, "", "WINDOW")
        self.model = host.FrontModel(self.p, np.zeros(self.p.mem_bytes, np.uint8), err_window=window)
        self.errors: list[str] = []
        self.phases = 0
        self.bad = 0
        self.tasks = 0
        self.sq_tags: list[int] = []
        self.cq: list[Completion] = []
        self.out_of_order = 0
        self.perf: list[dict[str, Any]] = []

    def write(self, msg: tuple[Phase, PhaseObs]) -> None:
        ph, obs = msg
        errs = self.check(obs)
        self.phases += 1
        self.tasks += len(obs.subs)
        self.perf.append({"phase": repr(ph), "tasks": len(obs.subs), "cycles": obs.cycles, "errors": len(errs)})
        if errs:
            self.bad += 1
            self.errors += [f"phase {self.phases - 1} {ph!r}: {e}" for e in errs]

    def check(self, o: PhaseObs) -> list[str]:
        p, m = self.p, self.model
        errs = list(o.problems)
        errs += [f"{w}: got {g:#x}, want {x:#x}" for w, g, x in o.checks if g != x]
        if o.layout is not None:
            m.wgt_base, m.wgt_size, m.mem_limit = o.layout.wgt_base, o.layout.wgt_size, o.layout.mem_limit
        by_tag: dict[int, Completion] = {}
        for c in o.cq:
            if c.tag in by_tag:
                errs.append(f"tag {c.tag:#06x} completed twice")
            by_tag[c.tag] = c
        disp = iter(o.dispatches)
        kernel_tasks: dict[int, list[KTask]] = {}
        for t in o.dispatches:
            kernel_tasks.setdefault(t.kernel, []).append(t)
        k_seen: dict[int, int] = {}
        sticky_after = 0
        for s in o.subs:
            c = by_tag.get(s.tag)
            flushed = (c is not None and c.kernel == FE_KERNEL and c.status == ST["ABORTED"]
                       and s.flush in ("must", "may"))
            if s.flush == "must" and not flushed:
                errs.append(f"tag {s.tag:#06x} (SQ position {s.pos}) was in the SQ at the soft reset: want ABORTED "
                            f"by the front end, got {c}")
            out = m.flush(s.words) if flushed else m.submit(s.words)
            if s.flush == "after" and out.status != ST["OK"]:
                sticky_after = 1
            if c is None:
                errs.append(f"tag {s.tag:#06x}: no completion")
                continue
            if out.on_kernel:
                t = next(disp, None)
                if t is None:
                    errs.append(f"tag {s.tag:#06x}: an OK MATMUL was never dispatched")
                    continue
                d = s.desc
                want = {"cmd_m": d.m, "cmd_n": d.n, "cmd_k": d.k, "cmd_act": d.act_addr >> 2,
                        "cmd_wgt": (m.wgt_base + d.wgt_off) >> 2, "cmd_out": d.out_addr >> 2, "cmd_es16": d.dtype,
                        "cmd_relu": d.relu, "cmd_pool": d.pool, "cmd_mult": d.mult, "cmd_shift": d.shift}
                bad = {f: (t.fields[f], v) for f, v in want.items() if t.fields[f] != v}
                if bad:
                    errs.append(f"tag {s.tag:#06x}: dispatched command differs (got, want): {bad}")
                if c.kernel != t.kernel:
                    errs.append(f"tag {s.tag:#06x}: ran on kernel {t.kernel}, CQ says kernel {c.kernel}")
                k_seen[t.kernel] = k_seen.get(t.kernel, 0) + 1
                kst = t.status
                if kst != (ST["ABORTED"] if t.aborted else out.status):
                    errs.append(f"tag {s.tag:#06x}: the kernel completed {kst}, the model says {out.status} "
                                f"(aborted={t.aborted})")
                if (c.status, c.cycles) != (kst, t.busy & p.cnt_mask):
                    errs.append(f"tag {s.tag:#06x}: CQ (status, cycles) = ({c.status}, {c.cycles}), the kernel "
                                f"reported ({kst}, {t.busy & p.cnt_mask}: {t.busy} busy cycles modulo "
                                f"2**{p.cnt_bits})")
            else:
                want_st = ST["ABORTED"] if flushed else out.status
                if (c.kernel, c.status, c.cycles) != (FE_KERNEL, want_st, 0):
                    errs.append(f"tag {s.tag:#06x} ({HostParams.STATUS[out.status]}): CQ (kernel, status, cycles) = "
                                f"({c.kernel}, {c.status}, {c.cycles}), want ({FE_KERNEL}, {want_st}, 0)")
        if o.flush_sticky is not None and o.flush_sticky != sticky_after:
            errs.append(f"STATUS.err_sticky = {o.flush_sticky} after the flush; errors completed after it: "
                        f"{sticky_after}")
        left = list(disp)
        if left:
            errs.append(f"{len(left)} dispatch(es) the model does not have (first: {left[0].fields})")
        # completions the CQ took from each kernel: exactly its tasks, in order
        for k, ts in kernel_tasks.items():
            got = [c.tag for c in o.cq if c.kernel == k]
            if len(got) != len(ts):
                errs.append(f"kernel {k}: {len(ts)} tasks, {len(got)} completions in the CQ")
        sq_tags = [s.tag for s in o.subs]
        errs += [f"order: {e}" for e in host.order_problems(sq_tags, o.cq, p.n_kernels)]
        pos = {t: i for i, t in enumerate(sq_tags)}
        ks = [pos.get(c.tag, -1) for c in o.cq if c.kernel != FE_KERNEL]
        if any(a > b for a, b in zip(ks, ks[1:])):
            self.out_of_order += 1
            o.samples.append(("interleave", "out_of_order"))
        # end of phase: EXP_SEQ, counters, IRQ_STATUS
        if o.end:
            if o.end["EXP_SEQ"] != m.exp_seq:
                errs.append(f"EXP_SEQ = {o.end['EXP_SEQ']}, the model's {m.exp_seq}")
            want = o.counters  # driven by the BFM / read from the CQ since the last PERF_CTRL clear
            mask = p.cnt_mask  # every counter wraps modulo 2**cnt_bits
            for n in PERF:
                if n != "PERF_CQ_STALL" and o.end[n] != want[n] & mask:  # PERF_CQ_STALL: the cqfull phase
                    errs.append(f"{n} = {o.end[n]}, want {want[n]} (modulo 2**{p.cnt_bits}: {want[n] & mask})")
            if (o.end["PERF_DONE"] + o.end["PERF_ERR"]) & mask != (want["PERF_DONE"] + want["PERF_ERR"]) & mask:
                errs.append(f"PERF_DONE + PERF_ERR = {o.end['PERF_DONE'] + o.end['PERF_ERR']}, completions read "
                            f"{want['PERF_DONE'] + want['PERF_ERR']}")
            if o.end["IRQ_STATUS"] & (IRQ_CPL | IRQ_ERR) != o.end["irq_expect"]:
                errs.append(f"IRQ_STATUS = {o.end['IRQ_STATUS']:#x}, want cpl/err bits {o.end['irq_expect']:#x}")
        self.sq_tags += sq_tags
        self.cq += o.cq
        return errs


class FrontCoverage(uvm_subscriber):
    def build_phase(self) -> None:
        p: HostParams = ConfigDB().get(self, "", "PARAMS")
        self.cg = cg = Covergroup("host.front")

        def pick(kind: str):
            return lambda t: t[1] if t[0] == kind else None

        cg.point("status", pick("status"), list(HostParams.STATUS))
        cg.point("kernel", pick("kernel"), list(range(p.n_kernels)) + [FE_KERNEL])
        cg.point("sq_occ", pick("sq_occ"), sorted({0, 1, p.depth - 1, p.depth}))
        cg.point("cq_full", pick("cq_full"), ["full", "not_full"])
        cg.point("doorbell", pick("doorbell"), ["back_to_back", "spaced"])
        cg.point("irq", pick("irq"), ["cpl", "err", "doorbell_overflow", "write_to_owned_slot", "cq_head_overflow"])
        phases = ConfigDB().get(self, "", "PHASE_NAMES")
        if "cqfull" in phases:
            cg.point("cqfull", pick("cqfull"), ["kernels", "front_end"])
        if "flush" in phases:
            cg.point("flush", pick("flush"), ["in_flight", "queued", "during"]
                     + (["cq_full"] if "flush:cqfull" in phases else []))
        if p.n_kernels > 1:
            cg.point("interleave", pick("interleave"), ["both_busy", "out_of_order"])

    def write(self, msg: tuple[Phase, PhaseObs]) -> None:
        for s in msg[1].samples:
            self.cg.sample(s)


class FrontEnv(DriverEnv):
    DRIVER, SCOREBOARD, COVERAGE = FrontDriver, FrontScoreboard, FrontCoverage


#: Descriptors (or rounds) of a phase when its spec gives no count.
DEFAULT_N = {"stream": 40, "limits": 30, "b2b": 6, "halt": 2}
#: Phases of a run when the ``phases`` option is not given.
DEFAULT_PHASES = ["reset", "pointers", "stream:60", "irq", "halt:2", "cqfull", "limits", "stream:60"]


def parse_phases(spec: list[str]) -> list[Phase]:
    """``"name[:n][:variant]"`` strings -> phases."""
    out = []
    for s in spec:
        parts = s.split(":")
        if parts[0] not in PHASES:
            raise ValueError(f"unknown phase {parts[0]!r}; known: {PHASES}")
        n = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else DEFAULT_N.get(parts[0], 0)
        variant = parts[-1] if len(parts) > 1 and not parts[-1].isdigit() else ""
        out.append(Phase(parts[0], n, variant))
    return out


class FrontTest(uvm_test):
    """The run's phases against the golden model; the ``phases`` option lists them."""

    def build_phase(self) -> None:
        ctx = TbContext.from_env()
        p = HostParams.from_dict(ctx.params)
        rng = np.random.default_rng(ctx.seed)
        spec = list(ctx.opt("phases", DEFAULT_PHASES))
        self.items = parse_phases(spec)
        lay = Layout.make(p, rng)
        # the error window: 1/16 of the results region (tasks writing there fail MEM_ERR)
        span = (lay.wgt_base - lay.split) // 4
        w0 = lay.split // 4 + int(rng.integers(0, span // 2))
        window = (w0, w0 + max(16, span // 16))
        bfm = FrontBfm(cocotb.top, ctx.record, p, rng, window)
        gen = DescGen(p, rng, int(rng.integers(0, 1 << 16)), window)
        h = Host(bfm, p, gen)
        ConfigDB().set(None, "*", "PARAMS", p)
        ConfigDB().set(None, "*", "WINDOW", window)
        ConfigDB().set(None, "*", "PHASES", Phases(h, p, rng))
        ConfigDB().set(None, "*", "PHASE_NAMES", {s.split(":")[0] for s in spec} | {s for s in spec if ":" in s})
        ConfigDB().set(None, "*", "ITEMS", self.items)
        self.ctx, self.p, self.bfm = ctx, p, bfm
        self.env = FrontEnv("env", self)

    async def run_phase(self) -> None:
        self.raise_objection()
        await start(cocotb.top)
        budget = sum(4000 + 400 * max(ph.n, self.p.depth) for ph in self.items)
        try:
            await with_timeout(ListSeq("seq", "ITEMS", prefix="phase").start(self.env.seqr), budget * CLOCK_NS, "ns")
        except SimTimeoutError as exc:
            raise AssertionError(f"watchdog: {self.env.scoreboard.phases}/{len(self.items)} phases done after "
                                 f"{budget} cycles") from exc
        if self.bfm.both_busy:
            self.env.coverage.cg.sample(("interleave", "both_busy"))
        self.ctx.summary.update(cycles=self.bfm.cycle, both_kernels_busy_cycles=self.bfm.both_busy,
                                abort_cycles=self.bfm.abort_cycles,
                                wrapped_tasks=sum(t.busy > self.p.cnt_mask for k in self.bfm.kernels for t in k.tasks))
        self.drop_objection()

    def check_phase(self) -> None:
        sb = self.env.scoreboard
        errors = list(sb.errors)
        if sb.phases != len(self.items):
            errors.append(f"{sb.phases} of {len(self.items)} phases checked")
        self.ctx.summary.update(blocks=sb.phases, tasks=sb.tasks, completions=len(sb.cq), mismatches=sb.bad,
                                errors=errors[:20], perf=sb.perf)
        self.ctx.finish(errors, self.logger)

    def report_phase(self) -> None:
        self.ctx.report_coverage(self.env.coverage.cg)

