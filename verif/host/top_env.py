"""pyuvm environment of the whole command path on ``host_top`` (front end, kernels,
arbiter, device memory; docs/host.md). The scenario (:mod:`.jobs`, option ``scenario``)
is a list of steps run by :class:`Submitter` through :class:`~.driver.HostDriver`;
:class:`CqMonitor` consumes the CQ (on the ``cq_nonempty`` pin, or on ``irq`` with a
slow poll as a fallback, as a real driver with interrupt coalescing would);
:class:`QueueScoreboard` replays the golden model (:class:`lockstep.models.host.FrontModel`)
in SQ order once everything has completed and checks:

* every submitted tag completes exactly once; the CQ order rules
  (:func:`~lockstep.models.host.order_problems`);
* each completion's status and kernel id (a front-end id for errors and NOP, a kernel
  for dispatched tasks); its exec_cycles equal to the busy cycles observed on that
  kernel's ``k_busy`` pin (the run paired with it: each kernel's completions come in the
  order its runs did) modulo ``2**cnt_bits`` (the kernel's counter wraps); the busy cycles
  equal to :func:`~lockstep.models.host.exec_cycles` when the scenario has no
  back-pressure and one kernel (the exec_cycles read too, modulo ``2**cnt_bits``), never
  below it otherwise;
* the whole device memory read back equals the model's image (results bit-exact, error
  tasks wrote nothing, nothing above MEM_LIMIT touched); a MEM_ERR or aborted task's
  result range is the only undefined region;
* PERF_DONE/PERF_ERR, PERF_BUSY (= the sum of kernel 0's exec_cycles), PERF_BUSY1,
  the memory beats (= the model's words when no task failed on the memory), each modulo
  ``2**cnt_bits`` (the counters wrap), EXP_SEQ, the pointers, STATUS at the end,
  IRQ_STATUS bits, the DMA byte counters;
* the CSR-level error steps: an overflowing doorbell and a write to an owned slot are
  ignored and flagged, a bad CQ_HEAD is ignored and flagged.
"""

from __future__ import annotations


import cocotb
import numpy as np
from cocotb.triggers import Event, First, ReadOnly, RisingEdge, SimTimeoutError, Timer, with_timeout
from cocotb.utils import get_sim_time
from pyuvm import uvm_component, uvm_env, uvm_test

from lockstep.gen.host.mem import lfsr_after
from lockstep.models import host as hm
from lockstep.models.host.params import HostParams

from ..context import CLOCK_NS, TbContext, start
from ..coverage import Covergroup
from .driver import HostDriver
from .front_env import CTRL_EN as _CTRL_EN, CTRL_HOE as _CTRL_HALT, CTRL_IRQ as _CTRL_IRQ
from .front_env import CTRL_RES as _CTRL_RESUME, CTRL_SR as _CTRL_SR, S_HALTED as _S_HALTED
from .jobs import Scenario, make_scenario

__all__ = ["FINAL_REGS", "HostTopTest", "check_queue", "ctrl_value", "define_coverage", "initial_image",
           "pair_runs", "reset_problems", "reset_values", "submissions"]

_IRQ_BITS = ("cpl", "err", "doorbell_overflow", "write_to_owned_slot", "cq_head_overflow")
#: Registers read at the end of a run (the per-edge order).
FINAL_REGS = ("PERF_DONE", "PERF_ERR", "PERF_BUSY", "PERF_BUSY1", "PERF_RD_BEATS", "PERF_WR_BEATS", "PERF_CQ_STALL",
              "PERF_TOTAL", "EXP_SEQ", "SQ_HEAD", "CQ_TAIL", "STATUS", "IRQ_STATUS")


def ctrl_value(sc: Scenario) -> int:
    """CTRL as the testbench writes it for scenario ``sc`` (enable, irq_en, halt_on_error)."""
    return _CTRL_EN | (_CTRL_IRQ if sc.use_irq else 0) | (_CTRL_HALT if sc.halt_on_error else 0)


def reset_values(p: HostParams) -> dict[str, int]:
    """The registers the testbench reads after reset, with their reset values."""
    return {"ID": hm.ID_VALUE, "HW_CFG": hm.hw_cfg(p), "CTRL": 0, "STATUS": 0b10100, "MEM_LIMIT": p.mem_bytes,
            "EXP_SEQ": 0}


def reset_problems(regs0: dict[str, int], p: HostParams) -> list[str]:
    """Messages for every register of :func:`reset_values` that ``regs0`` (read after
    reset) holds at another value."""
    return [f"reset value of {n} = {regs0[n]:#x}, expected {v:#x}" for n, v in reset_values(p).items()
            if regs0[n] != v]


def initial_image(p: HostParams, sc: Scenario, seed: int) -> np.ndarray:
    """The device memory the testbench loads before the first task: random bytes (from
    ``seed + 7``) as poison, the scenario's weights at WGT_BASE and every task's
    activations (regions are never reused within a scenario)."""
    rng = np.random.default_rng(seed + 7)
    image = rng.integers(0, 256, p.mem_bytes).astype(np.uint8)
    image[sc.wgt_base:sc.wgt_base + sc.wgt_size] = sc.weights
    for st in sc.steps:
        d = st.desc
        if st.kind == "task" and st.act is not None and st.act.shape == (d.m, d.k) and d.act_addr % 4 == 0 \
                and d.act_addr + d.m * d.k * d.es <= sc.wgt_base:
            hm.write_mat(image, d.act_addr, st.act, d.dtype)
    return image


def submissions(sc: Scenario) -> list[tuple[int, list[int], str]]:
    """Every task step of ``sc`` as the submitter stamps it: ``(step index, descriptor
    words, label)``, in SQ order (sequence numbers from 0, a BAD_SEQ mutation does not
    advance them)."""
    out, seq = [], 0
    for i, st in enumerate(sc.steps):
        if st.kind != "task":
            continue
        words = st.desc.with_(seq=seq).words()
        if st.mutate is not None:
            words = st.mutate[1](words, seq)
        if st.mutate is None or st.mutate[0] != "BAD_SEQ":
            seq = (seq + 1) & 0xFFFF
        out.append((i, words, st.label))
    return out


def pair_runs(cq: list[hm.Completion], runs: dict[int, list[int]] | None) -> list[int | None]:
    """Each CQ entry's busy run: kernel ``k``'s ``j``-th completion in CQ order is its
    ``j``-th run of ``k_busy[k]`` (busy cycles, whole); None for a front-end entry, when
    ``runs`` is None, or past the runs observed."""
    taken: dict[int, int] = {}
    out: list[int | None] = []
    for c in cq:
        if runs is None or c.kernel == hm.FE_KERNEL:
            out.append(None)
            continue
        j = taken.get(c.kernel, 0)
        taken[c.kernel] = j + 1
        ks = runs.get(c.kernel, [])
        out.append(ks[j] if j < len(ks) else None)
    return out


class Shared:
    """What the components share: the driver, the scenario and the record of the run."""

    def __init__(self, ctx: TbContext, p: HostParams, sc: Scenario, drv: HostDriver) -> None:
        self.ctx, self.p, self.sc, self.drv = ctx, p, sc, drv
        self.submitted: list[list[int]] = []  # descriptor words in SQ order
        self.labels: list[str] = []
        self.cq: list[hm.Completion] = []
        self.cq_cycle: list[int] = []
        self.problems: list[str] = []
        self.irq_seen = 0  # IRQ_STATUS bits the monitor cleared
        self.wakes = {"irq": 0, "poll": 0, "pin": 0}
        self.cq_full_seen = False
        self.stall_at_stop = 0  # PERF_CQ_STALL as the host last stopped consuming
        self.seeded = (1, 0)  # (LFSR seed, the cycle it took effect)
        self.consume = Event()
        self.consume.set()
        self.flagged: set[str] = set()  # IRQ bits the CSR steps must have set
        self.done = Event()
        self.b2b = 0  # doorbells rung with no gap after the previous one
        self.halts = 0  # halts seen (an error completion with halt_on_error) and resumed
        self.batches: list[int] = []  # sizes of the batches behind one doorbell
        self.occ_seen: set[int] = set()
        self.runs: dict[int, list[int]] = {k: [] for k in range(p.n_kernels)}  # k_busy runs (cycles)

    def note(self, msg: str) -> None:
        if len(self.problems) < 40:
            self.problems.append(msg)


class Submitter(uvm_component):
    """Runs the scenario's steps in order."""

    async def run_steps(self, sh: Shared) -> None:
        drv, p, sc = sh.drv, sh.p, sh.sc
        last_ring = -10
        pending: list[list[int]] = []  # a batch being gathered
        want = 0
        for st in sc.steps:
            await drv.cycles(st.gap)
            if st.kind == "task":
                # its activations are in the preloaded image (HostTopTest._setup)
                words = st.desc.with_(seq=drv.seq).words()
                if st.mutate is not None:
                    words = st.mutate[1](words, drv.seq)
                if st.mutate is None or st.mutate[0] != "BAD_SEQ":
                    drv.seq = (drv.seq + 1) & 0xFFFF
                sh.submitted.append(words)
                sh.labels.append(st.label)
                if st.batch > 1 or pending:  # gathered until the batch is whole
                    want = want or st.batch
                    pending.append(words)
                    if len(pending) == want:
                        last_ring = await drv.submit_batch(pending)
                        sh.batches.append(len(pending))
                        pending, want = [], 0
                    continue
                ring = await drv.submit_words(words)
                sh.occ_seen.add(min(drv.last_occupancy, p.depth))
                if ring - last_ring <= 10 and st.gap == 0:
                    sh.b2b += 1
                last_ring = ring
            elif st.kind == "doorbell_overflow":
                await self._doorbell_overflow(sh)
            elif st.kind == "owned_write":
                await self._owned_write(sh)
            elif st.kind == "cq_overflow":
                async with drv.lock:
                    bad = (drv.cq_head + p.depth + 1) % (2 * p.depth)
                    await drv._write(hm.CSR["CQ_HEAD"], bad)
                    if await drv._read(hm.CSR["CQ_HEAD"]) != drv.cq_head:
                        sh.note("a CQ_HEAD past CQ_TAIL was taken")
                sh.flagged.add("cq_head_overflow")
            elif st.kind == "flush":
                ctrl = _CTRL_EN | (_CTRL_IRQ if sc.use_irq else 0)
                await drv.set_reg("CTRL", ctrl | _CTRL_SR)
                for _ in range(10000):
                    if not (await drv.reg("STATUS")) >> 7 & 1:
                        break
                    await drv.cycles(16)
                else:
                    sh.note("the flush did not end within 160000 cycles")
            elif st.kind == "stop_cq":
                sh.consume.clear()
                sh.stall_at_stop = await drv.reg("PERF_CQ_STALL")
            elif st.kind == "resume_cq":
                # hold the CQ until the hardware reports it full and a completion waits:
                # PERF_CQ_STALL moved since the stop (not "nonzero": an earlier stop counted
                # too; one back at its value counts on while it waits, so a later read sees it)
                for _ in range(400):
                    if (await drv.reg("STATUS")) >> 3 & 1 and await drv.reg("PERF_CQ_STALL") != sh.stall_at_stop:
                        sh.cq_full_seen = True
                        break
                    await drv.cycles(32)
                else:
                    sh.note("resume_cq: while the host held the CQ, STATUS never showed it full with PERF_CQ_STALL "
                            "counting a waiting completion")
                if sh.cq_full_seen:
                    # a completion waits on the full CQ until the host makes room: PERF_CQ_STALL
                    # counts every cycle of it (modulo 2**cnt_bits; host_top@eb7c m070, the
                    # counter stepping down, survived a check that only held it to PERF_TOTAL)
                    s0, t0 = await drv.reg("PERF_CQ_STALL"), drv.now()
                    await drv.cycles(37)
                    s1, t1 = await drv.reg("PERF_CQ_STALL"), drv.now()
                    full = (await drv.reg("STATUS")) >> 3 & 1
                    mod = 1 << p.cnt_bits
                    if full and (s1 - s0) % mod != (t1 - t0) % mod:
                        sh.note(f"resume_cq: PERF_CQ_STALL went {s0} -> {s1} in {t1 - t0} cycles with the CQ full "
                                f"and a completion waiting (expected +{t1 - t0} modulo {mod})")
                sh.consume.set()
            elif st.kind == "wait":
                pass
            else:
                raise ValueError(f"unknown step kind {st.kind!r}")
        sh.consume.set()

    async def _doorbell_overflow(self, sh: Shared) -> None:
        drv, p = sh.drv, sh.p
        async with drv.lock:
            head = await drv._read(hm.CSR["SQ_HEAD"])
            bad = (head + p.depth + 1) % (2 * p.depth)
            await drv._write(hm.CSR["SQ_TAIL"], bad)
            if await drv._read(hm.CSR["SQ_TAIL"]) != drv.sq_tail:
                sh.note("an overflowing doorbell changed SQ_TAIL")
        sh.flagged.add("doorbell_overflow")

    async def _owned_write(self, sh: Shared) -> None:
        """Write garbage into the newest slot the hardware owns (when two or more are
        owned, so the head cannot pass it before the write lands)."""
        drv, p = sh.drv, sh.p
        for _ in range(200):
            async with drv.lock:
                head = await drv._read(hm.CSR["SQ_HEAD"])
                if drv.sq_occupancy(head) >= 2:
                    slot = (drv.sq_tail - 1) % p.depth
                    await drv._write(hm.SQ_BASE + 32 * slot + 4 * 3, 0xDEAD0000)
                    sh.flagged.add("write_to_owned_slot")
                    return
            await drv.cycles(3)
        sh.note("owned_write: never found two owned slots (the step proves nothing)")


class CqMonitor(uvm_component):
    """Consumes the CQ; records each entry and the cycle it was read. Also watches the
    ``k_busy`` pins: each kernel's busy runs, in cycles (whole: the exec_cycles a
    completion reads are them modulo ``2**cnt_bits``); and ``busy``, which must be
    "some kernel busy" whenever either changes (the first difference is noted)."""

    async def run_busy(self, sh: Shared) -> None:
        pin, any_pin = sh.drv.dut.k_busy, sh.drv.dut.busy
        prev = int(pin.value) if pin.value.is_resolvable else 0
        rise: dict[int, int] = {}
        differ = False
        while True:
            await First(pin.value_change, any_pin.value_change)
            await ReadOnly()
            t = int(get_sim_time("ns"))
            v = int(pin.value) if pin.value.is_resolvable else 0
            if not differ and (not any_pin.value.is_resolvable or int(any_pin.value) != (v != 0)):
                differ = True
                sh.note(f"busy = {any_pin.value} at {t} ns with k_busy = {pin.value} (busy is some kernel busy)")
            for k in range(sh.p.n_kernels):
                if (v ^ prev) >> k & 1:
                    if v >> k & 1:
                        rise[k] = t
                    elif k in rise:
                        sh.runs[k].append((t - rise.pop(k)) // CLOCK_NS)
            prev = v

    async def run_cq(self, sh: Shared, expected: int) -> None:
        drv, p = sh.drv, sh.p
        while len(sh.cq) < expected:
            await sh.consume.wait()
            if sh.sc.use_irq:
                t = await First(RisingEdge(drv.dut.irq), Timer(64 * CLOCK_NS, "ns"))
                sh.wakes["irq" if isinstance(t, RisingEdge) else "poll"] += 1
                st = await drv.reg("IRQ_STATUS")
                if st:
                    sh.irq_seen |= st
                    await drv.set_reg("IRQ_STATUS", st)
            else:
                await drv.wait_cq()
                sh.wakes["pin"] += 1
            if not sh.consume.is_set():
                continue
            tail = await drv.reg("CQ_TAIL")
            if (tail - drv.cq_head) % (2 * p.depth) == p.depth:
                sh.cq_full_seen = True
            got = await drv.completions()
            now = drv.now()
            sh.cq += got
            sh.cq_cycle += [now] * len(got)
            if sh.sc.halt_on_error and any(c.status != hm.ST["OK"] for c in got):
                await self._resume(sh)
        sh.done.set()

    async def _resume(self, sh: Shared) -> None:
        """After an error completion with halt_on_error: STATUS.halted set, SQ_HEAD still for
        a while (nothing fetched), then CTRL.resume, which clears it (docs/host.md section 6).
        No new error can complete meanwhile: the errors scenario's are the front end's."""
        drv = sh.drv
        st = await drv.reg("STATUS")
        if not st & _S_HALTED:
            sh.note(f"STATUS = {st:#x} after an error completion with halt_on_error: halted (bit 6) clear")
        head = await drv.reg("SQ_HEAD")
        await drv.cycles(24)
        if (now := await drv.reg("SQ_HEAD")) != head:
            sh.note(f"SQ_HEAD moved from {head} to {now} while halted")
        await drv.set_reg("CTRL", ctrl_value(sh.sc) | _CTRL_RESUME)
        if (st := await drv.reg("STATUS")) & _S_HALTED:
            sh.note(f"STATUS = {st:#x} after CTRL.resume: halted still set")
        sh.halts += 1


def check_queue(p: HostParams, sc: Scenario, submitted: list[list[int]], labels: list[str],
                cq: list[hm.Completion], problems: list[str], image: np.ndarray, device: np.ndarray,
                regs: dict[str, int], tp: dict[str, int], *, sq_tail: int, cq_head: int, irq_seen: int = 0,
                flagged: set[str] | frozenset[str] = frozenset(), moved: dict[str, int],
                cq_full_seen: bool = False,
                runs: dict[int, list[int]] | None = None) -> tuple[list[str], dict[str, int]]:
    """Every end-of-run check of a scenario (the module docstring): the golden model
    (:class:`lockstep.models.host.FrontModel`) replayed in SQ order against the
    completions, the memory, the counters, the pointers, STATUS, IRQ_STATUS and the DMA
    byte counters. Both modes call it (:class:`QueueScoreboard` per-edge,
    :mod:`lockstep.verif.host.tp_env` in throughput mode).

    Args:
        p: the parameters the testbench checks against.
        sc: the scenario.
        submitted: descriptor words in SQ order; ``labels`` their labels.
        labels: each submitted descriptor's label (its expected status, for messages).
        cq: the completions read, in CQ order.
        problems: messages noted during the run (they come first).
        image: the memory loaded before the first task.
        device: the whole device memory read back.
        regs: :data:`FINAL_REGS` read at the end.
        tp: the test port's ``DMA_WR_BYTES`` and ``DMA_RD_BYTES`` read at the end.
        sq_tail: the host's SQ_TAIL (SQ_HEAD must equal it).
        cq_head: the host's CQ_HEAD (CQ_TAIL must equal it).
        irq_seen: IRQ_STATUS bits the host cleared during the run.
        flagged: IRQ bits the CSR-level error steps must have set.
        moved: bytes the host moved through the DMA port before reading ``tp``
            (``{"wr": .., "rd": ..}``).
        cq_full_seen: the host saw the CQ full (needed when the scenario resumes a held CQ).
        runs: per kernel, the busy cycles of each run of its ``k_busy`` pin, in order (None:
            not observed; then a narrow ``cnt_bits`` leaves the lower bound on a stalled
            task's exec_cycles unchecked, as its wrapped value cannot show it).

    Returns:
        The error messages and the counts ``ok``, ``err``, ``busy0``, ``busy1``.
    """
    errs = list(problems)
    tags = [hm.Descriptor.unpack(w).tag for w in submitted]
    errs += hm.order_problems(tags, cq, p.n_kernels)
    mask = p.cnt_mask  # every counter and a completion's cycles wrap modulo 2**cnt_bits
    by_tag: dict[int, tuple[hm.Completion, int | None]] = {}
    for c, run in zip(cq, pair_runs(cq, runs)):
        by_tag.setdefault(c.tag, (c, run))
    if runs is not None:
        for k in range(p.n_kernels):
            n_cpl = sum(c.kernel == k for c in cq)
            if len(runs.get(k, [])) != n_cpl:
                errs.append(f"k_busy[{k}] rose {len(runs.get(k, []))} time(s), kernel {k} completed {n_cpl} task(s)")
    fm = hm.FrontModel(p, image.copy(), sc.wgt_base, sc.wgt_size, sc.mem_limit, 0, sc.err_window)
    undefined = []
    n_ok = n_err = busy0 = busy1 = 0
    rd = wr = 0
    clean = True
    irq_exp = 0
    for words, label in zip(submitted, labels):
        d = hm.Descriptor.unpack(words)
        c, run = by_tag.get(d.tag, (None, None))
        if c is None:
            continue
        if c.status == hm.ST["ABORTED"] and c.kernel == hm.FE_KERNEL:
            o = fm.flush(words)
        else:
            o = fm.submit(words)
        where = f"tag {d.tag:#06x} ({label})"
        if c.status == hm.ST["ABORTED"] and c.kernel != hm.FE_KERNEL:
            if not o.on_kernel:
                errs.append(f"{where}: ABORTED on kernel {c.kernel}, but the model does not dispatch it "
                            f"({HostParams.STATUS[o.status]})")
            undefined.append(o.out)
            clean = False
        elif c.status != o.status:
            errs.append(f"{where}: status {c.status_name}, model {HostParams.STATUS[o.status]}")
        if o.status == hm.ST["MEM_ERR"]:
            undefined.append(o.out)
            clean = False
        if c.status == hm.ST["ABORTED"] and sc.name != "flush":
            errs.append(f"{where}: ABORTED without a flush")
        if o.on_kernel and c.kernel == hm.FE_KERNEL and c.status != hm.ST["ABORTED"]:
            errs.append(f"{where}: completed by the front end, the model dispatches it")
        if not o.on_kernel and c.kernel != hm.FE_KERNEL:
            errs.append(f"{where}: completed by kernel {c.kernel}, the model completes it in the front end")
        if c.kernel == hm.FE_KERNEL and c.cycles != 0:
            errs.append(f"{where}: a front-end completion with exec_cycles {c.cycles}")
        if run is not None and c.cycles != run & mask:
            errs.append(f"{where}: exec_cycles {c.cycles}, busy cycles seen on k_busy[{c.kernel}] {run} (modulo "
                        f"2**{p.cnt_bits}: {run & mask})")
        # the whole duration: the busy run seen, else the exec_cycles read when they cannot wrap
        dur = run if run is not None else c.cycles if p.cnt_bits == 32 else None
        if o.cycles is not None and c.status == hm.ST["OK"]:
            if sc.exact_cycles and c.cycles != o.cq_cycles:
                errs.append(f"{where}: exec_cycles {c.cycles}, model {o.cq_cycles} (no back-pressure)")
            elif sc.exact_cycles and dur is not None and dur != o.cycles:
                errs.append(f"{where}: busy cycles {dur}, model {o.cycles} (no back-pressure)")
            elif dur is not None and dur < o.cycles:
                errs.append(f"{where}: busy cycles {dur} (exec_cycles {c.cycles}) below the stall-free {o.cycles}")
        rd += o.rd_words
        wr += o.wr_words
        n_ok += c.status == hm.ST["OK"]
        n_err += c.status != hm.ST["OK"]
        busy0 += c.cycles if c.kernel == 0 else 0
        busy1 += c.cycles if c.kernel == 1 else 0
        if d.irq:  # W0[6] of whatever completed, errors included
            irq_exp |= 1
        if c.status != hm.ST["OK"]:
            irq_exp |= 2
    # memory: the device against the model, undefined ranges excepted
    dev = device.copy()
    mdl = fm.mem
    for lo, hi in undefined:
        mdl[lo:hi] = dev[lo:hi]
    diff = np.flatnonzero(dev != mdl)
    if diff.size:
        a = int(diff[0])
        outs = [(d.tag, hm.task_ranges(d, sc.wgt_base)["out"]) for d in map(hm.Descriptor.unpack, submitted)]
        owner = [f"{tag:#06x}" for tag, (lo, hi) in outs if lo <= a < hi]
        errs.append(f"device memory: {diff.size} byte(s) differ from the model; first at {a:#x} "
                    f"(device {dev[a]:#04x}, model {mdl[a]:#04x}; result of task(s) {owner or 'none'})")
    # the counters wrap: each modulo 2**cnt_bits (busy0/busy1 sum the wrapped exec_cycles,
    # which agree with the whole sums modulo 2**cnt_bits)
    exp_regs = {"PERF_DONE": n_ok & mask, "PERF_ERR": n_err & mask, "PERF_BUSY": busy0 & mask,
                "PERF_BUSY1": busy1 & mask, "EXP_SEQ": fm.exp_seq, "SQ_HEAD": sq_tail, "CQ_TAIL": cq_head}
    if clean:
        exp_regs.update(PERF_RD_BEATS=rd & mask, PERF_WR_BEATS=wr & mask)
    for name, v in exp_regs.items():
        if regs[name] != v:
            errs.append(f"{name} = {regs[name]}, expected {v}")
    if p.cnt_bits == 32 and regs["PERF_CQ_STALL"] > regs["PERF_TOTAL"]:  # neither wraps in a run
        errs.append(f"PERF_CQ_STALL = {regs['PERF_CQ_STALL']} above PERF_TOTAL = {regs['PERF_TOTAL']} "
                    "(the cycles with enable)")
    status = regs["STATUS"]
    if status & 0x1F != 0b10100:  # not busy, SQ not full, SQ empty, CQ not full, CQ empty
        errs.append(f"STATUS = {status:#x} at the end: expected idle with both queues empty")
    if status & _S_HALTED:  # every halt was resumed (or none happened)
        errs.append(f"STATUS = {status:#x} at the end: halted")
    bits = irq_seen | regs["IRQ_STATUS"]
    want = irq_exp | sum(1 << _IRQ_BITS.index(f) for f in flagged)
    if bits != want:
        errs.append(f"IRQ_STATUS bits seen {bits:#x}, expected {want:#x} ({', '.join(sorted(flagged))})")
    if tp["DMA_WR_BYTES"] != moved["wr"] or tp["DMA_RD_BYTES"] != moved["rd"]:
        errs.append(f"DMA byte counters {tp['DMA_WR_BYTES']}/{tp['DMA_RD_BYTES']}, the driver moved "
                    f"{moved['wr']}/{moved['rd']}")
    if any(st.kind == "resume_cq" for st in sc.steps) and not cq_full_seen:
        errs.append("the host held the CQ, but the CQ never filled with a completion waiting")
    return errs, {"ok": n_ok, "err": n_err, "busy0": busy0, "busy1": busy1}


class QueueScoreboard(uvm_component):
    """The golden model replayed in SQ order, and every end-of-run check (:func:`check_queue`)."""

    def check_all(self, sh: Shared, image: np.ndarray, device: np.ndarray, regs: dict[str, int],
                  tp: dict[str, int]) -> list[str]:
        errs, self.counts = check_queue(
            sh.p, sh.sc, sh.submitted, sh.labels, sh.cq, sh.problems, image, device, regs, tp,
            sq_tail=sh.drv.sq_tail, cq_head=sh.drv.cq_head, irq_seen=sh.irq_seen, flagged=sh.flagged,
            moved=sh.dma_at_tp, cq_full_seen=sh.cq_full_seen, runs=sh.runs)
        return errs


class HostEnv(uvm_env):
    def build_phase(self) -> None:
        self.submitter = Submitter("submitter", self)
        self.monitor = CqMonitor("monitor", self)
        self.scoreboard = QueueScoreboard("scoreboard", self)


def define_coverage(p: HostParams) -> Covergroup:
    """The cover points of the whole command path (``host.queue``): completion status
    and kernel, SQ occupancy at a submission, the MATMUL variants, NOP, a full batch."""
    cg = Covergroup("host.queue")
    cg.point("status", lambda s: s.get("status"), list(range(12)))
    cg.point("kernel", lambda s: s.get("kernel"), [hm.FE_KERNEL] + list(range(p.n_kernels)))
    cg.point("sq_occupancy", lambda s: s.get("occ"), sorted({0, 1, p.depth - 1, p.depth}))
    cg.point("matmul", lambda s: s.get("task"), [(1, r, pl, dt) for r in (0, 1) for pl in (0, 1) for dt in (0, 1)])
    cg.point("nop", lambda s: s.get("task", (None,))[0], [0])
    # a whole SQ behind one doorbell (named, so runs of different depths merge)
    cg.point("batch", lambda s: "full" if s.get("batch") == p.depth else None, ["full"])
    return cg


def _coverage(sh: Shared) -> Covergroup:
    return define_coverage(sh.p)


class HostTopTest(uvm_test):
    """One scenario on host_top, checked against the golden model (module docstring)."""

    def build_phase(self) -> None:
        self.ctx = TbContext.from_env()
        self.p = HostParams.from_dict(self.ctx.params)
        sc = make_scenario(self.ctx.opt("scenario", "stream"), self.p, self.ctx.seed,
                           int(self.ctx.opt("tasks", 24)))
        self.sh = Shared(self.ctx, self.p, sc, HostDriver(cocotb.top, self.p))
        self.env = HostEnv("env", self)

    async def _setup(self) -> np.ndarray:
        """Registers, test port and the device memory image (poison, weights)."""
        sh, drv, sc, p = self.sh, self.sh.drv, self.sh.sc, self.p
        lo, hi = sc.err_window or (0, 0)
        tp = {"SEED": self.ctx.seed or 1, "BP_RATE": sc.bp_rate, "LAT_RATE": sc.lat_rate, "ERR_LO": lo, "ERR_HI": hi}
        for name, v in tp.items():
            await drv.tp_write(name, v)
            if name == "SEED":   # the edge the seed took effect at: the LFSR steps once an edge from it
                sh.seeded = (v, drv.now())
        for name, v in tp.items():  # the test port reads back what it holds
            got = await drv.tp_read(name)
            if got != v:
                sh.note(f"test port {name} reads {got:#x} after writing {v:#x}")
        for v in (p.mem_bytes + 4, 0xFFFF_FFFC):  # a MEM_LIMIT above the memory stores its size
            await drv.set_reg("MEM_LIMIT", 4)
            await drv.set_reg("MEM_LIMIT", v)
            got = await drv.reg("MEM_LIMIT")
            if got != p.mem_bytes:
                sh.note(f"MEM_LIMIT reads {got:#x} after writing {v:#x}: want mem_bytes {p.mem_bytes:#x}")
        for name, v in (("WGT_BASE", sc.wgt_base), ("WGT_SIZE", sc.wgt_size), ("MEM_LIMIT", sc.mem_limit)):
            await drv.set_reg(name, v)
            got = await drv.reg(name)
            if got != v:
                sh.note(f"{name} reads {got:#x} after writing {v:#x}")
        # the activations of every task land in the image too (regions are never reused)
        image = initial_image(p, sc, self.ctx.seed)
        await drv.dma_write(0, image)
        ctrl = ctrl_value(sc)
        await drv.set_reg("PERF_CTRL", 1)
        await drv.set_reg("CTRL", ctrl)
        return image

    async def run_phase(self) -> None:
        self.raise_objection()
        sh, drv, p = self.sh, self.sh.drv, self.p
        await start(cocotb.top)
        regs0 = {n: await drv.reg(n) for n in reset_values(p)}
        for msg in reset_problems(regs0, p):
            sh.note(msg)
        await drv.csr_write(hm.CSR["ID"], 0x12345678)  # RO: ignored
        if await drv.reg("ID") != hm.ID_VALUE:
            sh.note("a write to the RO register ID changed it")
        image = await self._setup()
        t0 = drv.now()
        n_tasks = sum(st.kind == "task" for st in sh.sc.steps)
        busy_mon = cocotb.start_soon(self.env.monitor.run_busy(sh))
        mon = cocotb.start_soon(self.env.monitor.run_cq(sh, n_tasks))
        budget = 4000 + n_tasks * 6000 + 400
        try:
            await with_timeout(self.env.submitter.run_steps(sh), budget * CLOCK_NS, "ns")
            await with_timeout(sh.done.wait(), budget * CLOCK_NS, "ns")
        except SimTimeoutError:
            sh.note(f"watchdog: {len(sh.cq)} of {n_tasks} completions after {drv.now() - t0} cycles")
            mon.cancel()
        t1 = drv.now()
        await drv.cycles(4)
        busy_mon.cancel()
        regs = {n: await drv.reg(n) for n in FINAL_REGS}
        tp = {n: await drv.tp_read(n) for n in ("DMA_WR_BYTES", "DMA_RD_BYTES")}
        # the memory's back-pressure draws come from its LFSR: its state, one step an edge
        # since the seed (host_top@d3c7 m023 and m096, a tap or the shift broken, only
        # changed the stall pattern, which no exact cycle count covers under back-pressure)
        lfsr, now = await drv.tp_read("LFSR"), drv.now()
        if lfsr != (want := lfsr_after(sh.seeded[0], now - sh.seeded[1])):
            sh.note(f"test port LFSR = {lfsr:#010x} {now - sh.seeded[1]} cycles after seed {sh.seeded[0]:#x}, "
                    f"expected {want:#010x}")
        sh.dma_at_tp = dict(drv.dma_bytes)  # before the final read-back
        device = await drv.dma_read(0, p.mem_bytes)
        self.device = device  # what EdgeStreamTest (verif/host/tp_env.py) dumps
        # PERF_CTRL clears every counter: at the start they are 0 anyway (a counter that
        # ignored the clear went unseen), so clear them again at the end, after the work
        await drv.set_reg("PERF_CTRL", 1)
        for n in [c for c in hm.CSR if c.startswith("PERF_") and c not in ("PERF_CTRL", "PERF_TOTAL")]:
            if v := await drv.reg(n):
                sh.note(f"{n} = {v} after PERF_CTRL cleared the counters at the end")
        if regs["IRQ_STATUS"]:  # W1C: its bits written back clear it, and irq falls (the run is over)
            await drv.set_reg("IRQ_STATUS", regs["IRQ_STATUS"])
            if (v := await drv.reg("IRQ_STATUS")) or int(drv.dut.irq.value):
                sh.note(f"IRQ_STATUS = {v:#x}, irq = {drv.dut.irq.value} after writing back its bits "
                        f"{regs['IRQ_STATUS']:#x} at the end")
        errs = self.env.scoreboard.check_all(sh, image, device, regs, tp)
        cg = _coverage(sh)
        for c in sh.cq:
            cg.sample({"status": c.status, "kernel": c.kernel})
        for o in sh.occ_seen:
            cg.sample({"occ": o})
        for b in sh.batches:
            cg.sample({"batch": b})
        for w in sh.submitted:
            d = hm.Descriptor.unpack(w)
            if d.opcode in (0, 1) and d.dtype in (0, 1):
                cg.sample({"task": (d.opcode, d.relu, d.pool, d.dtype)})
        self.cg = cg
        self.ctx.summary.update(scenario=sh.sc.name, tasks=n_tasks, cycles=t1 - t0, **self.env.scoreboard.counts,
                                perf_busy=regs["PERF_BUSY"], perf_total=regs["PERF_TOTAL"],
                                cq_stall=regs["PERF_CQ_STALL"], wakes=sh.wakes, b2b=sh.b2b, halts=sh.halts,
                                sq_full_waits=drv.full_waits, cq_full_seen=sh.cq_full_seen)
        self.errors = errs
        # what the regression reads: transactions checked and the scoreboard's mismatches
        self.ctx.summary.update(blocks=len(sh.cq), mismatches=len(errs))
        self.drop_objection()

    def check_phase(self) -> None:
        errors = self.errors
        self.ctx.summary.update(errors=errors[:20])
        self.ctx.finish(errors, self.logger)

    def report_phase(self) -> None:
        self.ctx.report_coverage(self.cg)
