"""The host library's pipeline on the simulator (docs/host.md section 10; spec 002
sections 2.3-2.10): the application submits :class:`Task` s; :class:`HostLibrary` turns
each into a :class:`~lockstep.models.host.lib.TaskPacket` and moves it through the stages
as cocotb coroutines joined by bounded :class:`cocotb.queue.Queue` s.

* **pre** (``workers["pre"]`` coroutines): the stage's time (a Timer of the drawn cycles,
  :func:`~lockstep.models.host.pipe.draw_times`), then float32 -> fixed point
  (:func:`~lockstep.models.host.lib.quantize`) and padding to whole words.
* **exec**: the host -> device DMA of the data through the memory map (only bytes not
  flagged transferred move), the descriptor and doorbell (waiting while the SQ is full),
  then the kernel; the result's device -> host DMA when its completion arrives.
* **post** (``workers["post"]``): the stage's time, then fixed point -> float32.

Modes: ``serial`` (one task at a time through everything), ``lockstep`` (the patent's
periods: packet ``i`` is in stage ``s`` during period ``i + s``; a period ends when every
stage has finished its packet, a barrier), ``stream`` (free-running stages; the exec
stage's feeder keeps the SQ full and a reader returns results as they complete).

Routes (the patent's debug switch): ``accel``, ``host`` (the host-CPU backend,
:func:`~lockstep.models.host.lib.host_run`, no device), ``both`` (both, compared bit-exact;
a difference fails the task). Results return in submission order per stream
(:class:`~lockstep.models.host.pipe.InOrder`); every task gets exactly one result; a task
the device refuses comes back with the hardware's status name; an exception inside a
stage marks the packet FAILED and forwards it.

The event log (:class:`~lockstep.models.host.pipe.Event`, times in cycles) feeds
:func:`~lockstep.models.host.pipe.busy_fraction` and
:func:`~lockstep.models.host.pipe.timing_chart`; kernel intervals come from the
``k_busy`` pins.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import cocotb
import numpy as np
from cocotb.queue import Queue
from cocotb.triggers import Event as CEvent, ReadOnly

from lockstep.models import host as hm
from lockstep.models.host.params import HostParams
from lockstep.models.host.lib import (
    DeviceAllocator, MemoryMap, TaskPacket, TaskResult, compare, dequantize, host_run, quantize, scale_for,
    split_task, to_bytes,
)
from lockstep.models.host.pipe import Event, InOrder, draw_times

from .driver import HostDriver

__all__ = ["Task", "HostLibrary", "MODES", "ROUTES"]

MODES = ("serial", "lockstep", "stream")
ROUTES = ("accel", "host", "both")


@dataclass
class Task:
    """What the application submits: ``x`` (float, M x K) times the weights of
    ``layer`` (K x N float), then the scaler to ``ofrac`` fraction bits, ReLU and pool.
    Any M and N: the library cuts the task into hardware tasks of at most ``m_max`` rows
    and ``n_max`` columns (:func:`~lockstep.models.host.lib.split_task`; K and N padded to
    whole words with zeros, which is exact) and joins their results; K must fit
    ``k_max``."""

    x: np.ndarray
    layer: Hashable
    relu: bool = False
    pool: bool = False
    stream: int = 0
    route: str = "accel"


class HostLibrary:
    """The library on ``host_top`` (module docstring).

    Args:
        drv: the driver of the DUT.
        p: the parameters.
        weights: layer key -> K x N float weights (uploaded once, claim 6).
        dtype: 0 int8, 1 int16.
        frac, wfrac, ofrac: fraction bits of the activations, weights and results.
        mode: ``serial``, ``lockstep`` or ``stream``.
        times: stage time specs for ``pre`` and ``post`` in cycles (``draw_times``).
        workers: ``{"pre": w, "post": w}``.
        queue_depth: capacity of the queues between stages.
        seed: the stage times' seed.
    """

    def __init__(self, drv: HostDriver, p: HostParams, weights: Mapping[Hashable, np.ndarray], *, dtype: int = 0,
                 frac: int = 4, wfrac: int = 4, ofrac: int = 4, mode: str = "stream",
                 times: Mapping[str, Any] | None = None, workers: Mapping[str, int] | None = None,
                 queue_depth: int = 2, seed: int = 0) -> None:
        if mode not in MODES:
            raise ValueError(f"HostLibrary: mode {mode!r} must be one of {MODES}")
        self.drv, self.p, self.dtype = drv, p, dtype
        self.frac, self.wfrac, self.ofrac = frac, wfrac, ofrac
        self.mult, self.shift = scale_for(frac, wfrac, ofrac)
        # a JSON option turns ("uniform", lo, hi) into a list: draw_times wants the tuple
        self.mode = mode
        self.times = {k: tuple(v) if isinstance(v, list) and v and isinstance(v[0], str) else v
                      for k, v in (times or {}).items()}
        self.workers = {"pre": 1, "post": 1, **(workers or {})}
        self.queue_depth, self.seed = queue_depth, seed
        # each layer's weights quantised, zero-padded and cut into the column panels the
        # kernel reads (one per n_max columns); the image holds every panel of every layer
        self.splits = {k: split_task(2, *np.shape(w), p, dtype) for k, w in weights.items()}
        self.wq = {(k, cb): panel for k, w in weights.items()
                   for cb, panel in enumerate(self.splits[k].panels(quantize(np.asarray(w, np.float32), dtype,
                                                                             wfrac)[0]))}
        b = p.mem_bytes
        # data and results in the lower half, the weight image in the upper half
        self.map = MemoryMap(DeviceAllocator(b // 2, base=0, align=64))
        self.wmap = MemoryMap(DeviceAllocator(b // 2, base=b // 2, align=64))
        self.events: list[Event] = []
        self.results: list[TaskResult] = []
        self.inorder = InOrder()
        self._tag = 0
        self._waiting: dict[int, CEvent] = {}
        self._cpl: dict[int, hm.Completion] = {}
        self.layer_of: dict[int, tuple[Hashable, int]] = {}  # packet tag -> (layer, column panel)
        self.task_of: dict[int, int] = {}  # packet tag -> application task
        self.task_split: dict[int, Any] = {}
        self.in_key: dict[int, tuple] = {}  # packet tag -> its row block's host block id
        self._in_addr: dict[tuple, int] = {}  # row block -> device address while mapped
        self._in_left: dict[tuple, int] = {}  # row block -> packets not yet collected
        self._on_device: set[int] = set()  # packets holding device memory
        self._parts: dict[int, list[TaskPacket]] = {}
        self.periods: list[int] = []
        self.sq_wait = 0  # cycles the exec stage waited for a free SQ slot
        self.img = None

    # ---- set-up ----------------------------------------------------------------------
    async def start(self) -> None:
        """Upload every layer's weights once, program WGT_BASE/WGT_SIZE, enable."""
        img = self.wmap.upload_weights_once(self.wq, self.dtype)
        self.img = img
        if img.moved:  # the first upload: the whole image, one transfer (claim 6)
            t0 = self.drv.now()
            await self.drv.dma_write(img.dev_addr, self.wmap.host_bytes(img.block)[:img.nbytes])
            self.events.append(Event("dma_wr", -1, "dma_wr", t0, self.drv.now()))
        await self.drv.set_reg("WGT_BASE", img.dev_addr)
        await self.drv.set_reg("WGT_SIZE", img.nbytes)
        await self.drv.set_reg("PERF_CTRL", 1)
        await self.drv.set_reg("CTRL", 1)
        cocotb.start_soon(self._cq_reader())
        for k in range(self.p.n_kernels):
            cocotb.start_soon(self._busy_monitor(k))

    # ---- monitors ----------------------------------------------------------------------
    async def _cq_reader(self) -> None:
        while True:
            await self.drv.wait_cq()
            for c in await self.drv.completions():
                self._cpl[c.tag] = c
                ev = self._waiting.get(c.tag)
                if ev is not None:
                    ev.set()

    async def _busy_monitor(self, k: int) -> None:
        pin = self.drv.dut.k_busy
        busy, t0 = 0, 0
        self.kbusy = getattr(self, "kbusy", {})
        self.kbusy[k] = []
        while True:
            await pin.value_change
            await ReadOnly()
            v = int(pin.value) >> k & 1
            if v and not busy:
                t0 = self.drv.now()
            elif busy and not v:
                self.kbusy[k].append((t0, self.drv.now()))
            busy = v

    # ---- stages ------------------------------------------------------------------------
    def _packets(self, t: Task, ti: int) -> list[TaskPacket]:
        """The hardware tasks of application task ``ti`` (row blocks x column blocks)."""
        x = np.asarray(t.x)
        sp = split_task(x.shape[0], x.shape[1], self.splits[t.layer].n, self.p, self.dtype, t.pool)
        out = []
        for rb, cb, _ in sp.tasks():
            m, k, n = sp.dims(rb, cb)
            tag = self._tag
            self._tag = (self._tag + 1) & 0xFFFF
            self.layer_of[tag] = (t.layer, cb)
            self.task_of[tag] = ti
            self.in_key[tag] = ("in", ti, rb)
            self._in_left[("in", ti, rb)] = len(sp.col_blocks)
            out.append(TaskPacket(tag=tag, m=m, k=k, n=n, stream=t.stream, seq=ti, dtype=self.dtype, frac=self.frac,
                                  wfrac=self.wfrac, ofrac=self.ofrac, scale_mult=self.mult, scale_shift=self.shift,
                                  relu=t.relu, pool=t.pool, route=t.route,
                                  wgt_off=self.img.offsets[(t.layer, cb)], payload_in=sp.a_block(x, rb)))
        self.task_split[ti] = sp
        return out

    async def _pre(self, pk: TaskPacket, cycles: float) -> None:
        t0 = self.drv.now()
        await self.drv.cycles(int(cycles))
        try:
            pk.payload_in = quantize(pk.payload_in, pk.dtype, pk.frac)[0]
        except Exception as exc:  # a stage never loses a packet
            pk.fail(f"pre: {exc}")
        self.events.append(Event("pre", pk.tag, "pre", t0, self.drv.now()))

    async def _submit(self, pk: TaskPacket) -> None:
        """Data DMA (through the map), then the descriptor."""
        if pk.status == "FAILED" or pk.route == "host":
            return
        a = to_bytes(pk.payload_in, pk.dtype)
        mo = (pk.m // 2 if pk.pool else pk.m) * pk.n * hm.esize(pk.dtype)
        # the packets of one row block share its device copy: mapped once, and the
        # transferred flags keep push() from moving it again (the patent's write once)
        blk_in, blk_out = self.in_key[pk.tag], ("out", pk.tag)
        if blk_in in self._in_addr:
            self.map.host_write(blk_in, 0, a)  # identical bytes: no flag clears
        else:
            self._in_addr[blk_in] = self.map.map_block(blk_in, a)
        pk.dev_in_addr = self._in_addr[blk_in]
        pk.dev_out_addr = self.map.map_block(blk_out, np.zeros(mo, np.uint8))
        self._on_device.add(pk.tag)
        t0 = self.drv.now()
        for tr in self.map.push(blk_in):
            await self.drv.dma_write(tr.dev_addr, a[tr.offset:tr.offset + tr.nbytes])
        t1 = self.drv.now()
        self.events.append(Event("dma_wr", pk.tag, "dma_wr", t0, t1))
        self._waiting[pk.tag] = CEvent()
        await self.drv.submit(pk.descriptor(0, self.img.dev_addr, self.img.dev_addr))
        # the packet write itself; the wait for a free SQ slot before it is not a transfer
        self.events.append(Event("desc", pk.tag, "dma_wr", self.drv.slot_cycle, self.drv.now()))
        self.sq_wait += self.drv.slot_cycle - t1

    async def _collect(self, pk: TaskPacket) -> None:
        """Wait for the completion, read the result back, free the device memory."""
        if pk.status == "FAILED":
            return
        if pk.route in ("host", "both"):
            ref = host_run(pk, self.wq_for(pk))
        if pk.route == "host":
            pk.payload_out = ref
            pk.set_status("OK")
            return
        await self._waiting[pk.tag].wait()
        del self._waiting[pk.tag]
        c = self._cpl.pop(pk.tag)
        pk.kernel_id = c.kernel
        if c.status != hm.ST["OK"]:
            pk.set_status(c.status_name, f"the device completed it with {c.status_name}")
        else:
            mo = (pk.m // 2 if pk.pool else pk.m)
            t0 = self.drv.now()
            raw = await self.drv.dma_read(pk.dev_out_addr, mo * pk.n * hm.esize(pk.dtype))
            self.map.pull(("out", pk.tag))  # bookkeeping: counters and flags
            self.events.append(Event("dma_rd", pk.tag, "dma_rd", t0, self.drv.now()))
            pk.payload_out = hm.read_mat(raw, 0, mo, pk.n, pk.dtype)
            pk.set_status("OK")
            if pk.route == "both":
                cmp = compare(pk.payload_out, ref)
                if not cmp:
                    pk.fail(f"route both: accelerator and host differ: {cmp.message}")
        self._release(pk)

    def _release(self, pk: TaskPacket) -> None:
        """Free a collected packet's device memory: its result, and its row block once
        every packet of that block is collected."""
        if pk.tag not in self._on_device:
            return
        self._on_device.discard(pk.tag)
        self.map.unmap(("out", pk.tag))
        key = self.in_key[pk.tag]
        self._in_left[key] -= 1
        if self._in_left[key] == 0:
            self.map.unmap(key)
            del self._in_addr[key], self._in_left[key]

    def wq_for(self, pk: TaskPacket) -> np.ndarray:
        """The quantised weights of the packet: its layer's column panel."""
        return self.wq[self.layer_of[pk.tag]]

    async def _post(self, pk: TaskPacket, cycles: float) -> None:
        t0 = self.drv.now()
        await self.drv.cycles(int(cycles))
        if pk.status == "OK":
            pk.payload_out = dequantize(pk.payload_out, pk.dtype, pk.ofrac)
        self.events.append(Event("post", pk.tag, "post", t0, self.drv.now()))
        for tag, done in self.inorder.complete(pk.tag, pk):
            self._join(done)

    def _join(self, pk: TaskPacket) -> None:
        """Packets come back in submission order per stream; an application task's
        result is its packets' results joined, once the last one is back."""
        ti = self.task_of[pk.tag]
        parts = self._parts.setdefault(ti, [])
        parts.append(pk)
        sp = self.task_split[ti]
        if len(parts) < sp.count:
            return
        del self._parts[ti]
        bad = next((q for q in parts if q.status != "OK"), None)
        if bad is not None:
            self.results.append(TaskResult(ti, pk.stream, bad.status, None,
                                           f"hardware task {bad.tag}: {bad.error}"))
        else:
            self.results.append(TaskResult(ti, pk.stream, "OK", sp.join([q.payload_out for q in parts])))

    # ---- modes -------------------------------------------------------------------------
    async def run(self, tasks: list[Task]) -> list[TaskResult]:
        """Every task through the pipeline; the results in submission order per stream."""
        pks = [pk for i, t in enumerate(tasks) for pk in self._packets(t, i)]
        n = len(pks)
        tm = draw_times(n, {k: v for k, v in self.times.items() if k in ("pre", "post")}, self.seed)
        w = self.workers
        pre_t = tm["pre"] / w["pre"] if self.mode != "stream" else tm["pre"]
        post_t = tm["post"] / w["post"] if self.mode != "stream" else tm["post"]
        for pk in pks:
            self.inorder.submit(pk.tag, pk.stream)
        self.t_start = self.drv.now()
        if self.mode == "serial":
            for i, pk in enumerate(pks):
                await self._pre(pk, pre_t[i])
                await self._submit(pk)
                await self._collect(pk)
                await self._post(pk, post_t[i])
        elif self.mode == "lockstep":
            for j in range(n + 2):
                t0 = self.drv.now()
                jobs = []
                if j < n:
                    jobs.append(cocotb.start_soon(self._pre(pks[j], pre_t[j])))
                if 0 <= j - 1 < n:
                    jobs.append(cocotb.start_soon(self._exec(pks[j - 1])))
                if 0 <= j - 2 < n:
                    jobs.append(cocotb.start_soon(self._post(pks[j - 2], post_t[j - 2])))
                for job in jobs:  # the barrier: the period ends when every stage is done
                    await job
                self.periods.append(self.drv.now() - t0)
        else:
            await self._stream(pks, pre_t, post_t, len(tasks))
        self.t_end = self.drv.now()
        self._kernel_events(pks)
        return self.results

    async def _exec(self, pk: TaskPacket) -> None:
        await self._submit(pk)
        await self._collect(pk)

    async def _stream(self, pks: list[TaskPacket], pre_t: np.ndarray, post_t: np.ndarray, n_tasks: int) -> None:
        q_pre, q_fly, q_post = Queue(self.queue_depth), Queue(), Queue(self.queue_depth)
        src = list(range(len(pks)))
        self.q_max = {"pre": 0, "post": 0}
        done = CEvent()

        async def pre(wk: int) -> None:
            while src:
                i = src.pop(0)
                await self._pre(pks[i], pre_t[i])
                await q_pre.put(i)
                self.q_max["pre"] = max(self.q_max["pre"], q_pre.qsize())

        async def feeder() -> None:
            for _ in pks:
                i = await q_pre.get()
                await self._submit(pks[i])
                await q_fly.put(i)

        async def reader() -> None:
            for _ in pks:
                i = await q_fly.get()  # SQ order: one kernel completes in this order
                await self._collect(pks[i])
                await q_post.put(i)
                self.q_max["post"] = max(self.q_max["post"], q_post.qsize())

        async def post(wk: int) -> None:
            while True:
                i = await q_post.get()
                await self._post(pks[i], post_t[i])
                if len(self.results) == n_tasks:  # one result per application task
                    done.set()

        for wk in range(self.workers["pre"]):
            cocotb.start_soon(pre(wk))
        cocotb.start_soon(feeder())
        cocotb.start_soon(reader())
        for wk in range(self.workers["post"]):
            cocotb.start_soon(post(wk))
        await done.wait()

    def _kernel_events(self, pks: list[TaskPacket]) -> None:
        """Kernel busy intervals (from the pins), tagged: a kernel runs its tasks in SQ
        order, and the SQ order is the submission order."""
        order: dict[int, list[int]] = {}
        for pk in pks:
            if pk.kernel_id is not None and pk.kernel_id != hm.FE_KERNEL:
                order.setdefault(pk.kernel_id, []).append(pk.tag)
        for k, ivs in getattr(self, "kbusy", {}).items():
            tags = order.get(k, [])
            for j, (s, e) in enumerate(ivs):
                self.events.append(Event("kernel", tags[j] if j < len(tags) else -1, f"kernel{k}", s, e))
