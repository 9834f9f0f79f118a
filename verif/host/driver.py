"""The simulator-facing driver of the host family (the patent's FPGA driver 145): every
pin-level access to ``host_top`` (docs/host.md sections 4, 9 and 11).

* CSR port: :meth:`HostDriver.csr_write` (one cycle), :meth:`HostDriver.csr_read`
  (combinational, between edges). The CSR port is one resource: a
  :class:`cocotb.triggers.Lock` serialises the coroutines that share it.
* DMA port: :meth:`HostDriver.dma_write` and :meth:`HostDriver.dma_read`, one 32-bit
  word per cycle (the host <-> device transfers of the patent's memory map).
* Queues: :meth:`HostDriver.submit` writes a descriptor into the tail slot and rings the
  doorbell, waiting (without polling every cycle) while the SQ is full: the back-pressure
  the application sees. :meth:`HostDriver.submit_batch` writes up to ``depth``
  descriptors behind one doorbell. :meth:`HostDriver.completions` reads every CQ entry present and
  advances CQ_HEAD; :meth:`HostDriver.wait_cq` sleeps until one is present (on the
  ``cq_nonempty`` or ``irq`` pin). A full SQ sleeps on the ``sq_full`` pin.
* Test port: :meth:`HostDriver.tp_write`, :meth:`HostDriver.tp_read` (seed, back-pressure
  and latency rates, the error window, the DMA byte counters).

Times are in cycles: :meth:`HostDriver.now`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from cocotb.triggers import FallingEdge, Lock, ReadOnly, RisingEdge, Timer
from cocotb.utils import get_sim_time

from lockstep.gen.host.mem import TP_REGS
from lockstep.models import host as hm
from lockstep.models.host.params import HostParams

from ..context import CLOCK_NS

__all__ = ["HostDriver", "TP"]

#: Test-port register addresses of host_top (docs/host.md section 9).
TP = {name.upper(): n for name, n in TP_REGS.items()}
_M32 = (1 << 32) - 1


class HostDriver:
    """Pin-level access to ``host_top`` for parameters ``p``."""

    def __init__(self, dut: Any, p: HostParams) -> None:
        self.dut = dut
        self.p = p
        self.lock = Lock()
        self.edge = RisingEdge(dut.clk)
        self.sq_tail = 0  # the host's copy of SQ_TAIL
        self.cq_head = 0  # the host's copy of CQ_HEAD
        self.seq = 0  # the next descriptor's sequence number
        self.dma_bytes = {"wr": 0, "rd": 0}
        self.full_waits = 0  # times submit found the SQ full
        for n in ("csr_we", "csr_addr", "csr_wdata", "csr_raddr", "dma_we", "dma_addr", "dma_wdata", "dma_re",
                  "dma_raddr", "tp_we", "tp_addr", "tp_wdata", "tp_raddr"):
            getattr(dut, n).value = 0

    # ---- time ------------------------------------------------------------------------
    def now(self) -> int:
        """The current cycle (simulation time in clock periods)."""
        return int(get_sim_time("ns")) // CLOCK_NS

    async def cycles(self, n: int) -> None:
        """Let ``n`` cycles pass (one Timer, not ``n`` edges)."""
        if n > 0:
            await Timer(n * CLOCK_NS, "ns")

    async def _settle(self) -> None:
        """Move off the clock edge (drive inputs between edges)."""
        await FallingEdge(self.dut.clk)

    # ---- CSR port --------------------------------------------------------------------
    async def csr_write(self, addr: int, value: int) -> None:
        """Write a CSR (takes effect at the next rising edge)."""
        async with self.lock:
            await self._write(addr, value)

    async def _write(self, addr: int, value: int, port: str = "csr") -> None:
        """One write on the CSR port (or the test port, ``port="tp"``: same signals)."""
        we, a, wd = (getattr(self.dut, f"{port}_{n}") for n in ("we", "addr", "wdata"))
        await self._settle()
        we.value = 1
        a.value = addr
        wd.value = int(value) & _M32
        await self.edge
        we.value = 0

    async def csr_read(self, addr: int) -> int:
        """Read a CSR (combinational)."""
        async with self.lock:
            return await self._read(addr)

    async def _read(self, addr: int, port: str = "csr") -> int:
        """One combinational read on the CSR port (or the test port)."""
        await self._settle()
        getattr(self.dut, f"{port}_raddr").value = addr
        await Timer(1, "ns")
        return int(getattr(self.dut, f"{port}_rdata").value)

    async def reg(self, name: str) -> int:
        """Read a CSR by name (``models.host.CSR``)."""
        return await self.csr_read(hm.CSR[name])

    async def set_reg(self, name: str, value: int) -> None:
        """Write a CSR by name."""
        await self.csr_write(hm.CSR[name], value)

    # ---- test port -------------------------------------------------------------------
    async def tp_write(self, name: str, value: int) -> None:
        """Write a test-port register of host_top."""
        await self._write(TP[name], value, "tp")

    async def tp_read(self, name: str) -> int:
        """Read a test-port register (combinational)."""
        return await self._read(TP[name], "tp")

    # ---- DMA port --------------------------------------------------------------------
    async def dma_write(self, addr: int, data: np.ndarray) -> None:
        """Copy ``data`` (uint8, a whole number of words) to device byte ``addr`` (word
        aligned), one word per cycle."""
        raw = np.ascontiguousarray(data, dtype=np.uint8)
        if addr % 4 or raw.size % 4:
            raise ValueError(f"dma_write: address {addr:#x} and {raw.size} bytes must be whole words")
        words = raw.view("<u4").tolist()
        d = self.dut
        await self._settle()
        d.dma_we.value = 1
        for i, w in enumerate(words):
            d.dma_addr.value = addr // 4 + i
            d.dma_wdata.value = w
            await self.edge
        d.dma_we.value = 0
        self.dma_bytes["wr"] += raw.size

    async def dma_read(self, addr: int, nbytes: int) -> np.ndarray:
        """Copy ``nbytes`` (whole words) from device byte ``addr``, one word per cycle."""
        if addr % 4 or nbytes % 4:
            raise ValueError(f"dma_read: address {addr:#x} and {nbytes} bytes must be whole words")
        d = self.dut
        out = np.zeros(nbytes // 4, dtype="<u4")
        await self._settle()
        d.dma_re.value = 1
        for i in range(nbytes // 4):
            d.dma_raddr.value = addr // 4 + i
            await Timer(1, "ns")
            out[i] = int(d.dma_rdata.value)
            await self.edge
            await self._settle()
        d.dma_re.value = 0
        self.dma_bytes["rd"] += nbytes
        return out.view(np.uint8)

    # ---- queues ----------------------------------------------------------------------
    def sq_occupancy(self, head: int) -> int:
        """SQ occupancy from the host's tail and a read ``head``."""
        return (self.sq_tail - head) % (2 * self.p.depth)

    async def submit(self, desc: hm.Descriptor) -> int:
        """Stamp ``desc`` with the next sequence number and submit it (:meth:`submit_words`)."""
        desc = desc.with_(seq=self.seq)
        self.seq = (self.seq + 1) & 0xFFFF
        return await self.submit_words(desc.words())

    async def submit_words(self, words: list[int]) -> int:
        """Write the 8 words into the tail slot and ring the doorbell; returns the cycle
        of the doorbell. Waits while the SQ is full (the back-pressure the application
        sees); never overwrites a slot the hardware owns."""
        return await self.submit_batch([words])

    async def submit_batch(self, batch: list[list[int]]) -> int:
        """Write several descriptors (at most ``depth``) into consecutive slots and ring the
        doorbell once for all of them (the patent's batch of 8); waits until the SQ has
        room for the whole batch: on the ``sq_full`` pin while it is full, a few cycles
        at a time while it has room for fewer. Returns the cycle of the doorbell."""
        depth = self.p.depth
        if not 1 <= len(batch) <= depth:
            raise ValueError(f"submit_batch: {len(batch)} descriptors; a batch holds 1 to {depth}")
        self.last_occupancy = -1
        while True:
            async with self.lock:
                head = await self._read(hm.CSR["SQ_HEAD"])
                occ = self.sq_occupancy(head)
                self.last_occupancy = max(self.last_occupancy, occ)
                if occ + len(batch) <= depth:
                    self.slot_cycle = self.now()  # room: the packet write starts
                    tail = self.sq_tail
                    for words in batch:
                        for w, v in enumerate(words):
                            await self._write(hm.SQ_BASE + 32 * (tail % depth) + 4 * w, v)
                        tail = (tail + 1) % (2 * depth)
                    self.sq_tail = tail
                    await self._write(hm.CSR["SQ_TAIL"], self.sq_tail)
                    return self.now()
            self.full_waits += 1
            await ReadOnly()
            if int(self.dut.sq_full.value):  # sleep until the hardware takes a descriptor
                await FallingEdge(self.dut.sq_full)
            else:  # room, but not for the whole batch: the kernels must drain
                await self.cycles(4 * depth)

    async def completions(self) -> list[hm.Completion]:
        """Every CQ entry present, in CQ order; CQ_HEAD advanced past them."""
        depth = self.p.depth
        out = []
        async with self.lock:
            tail = await self._read(hm.CSR["CQ_TAIL"])
            while self.cq_head != tail:
                s = self.cq_head % depth
                w0 = await self._read(hm.CQ_BASE + 8 * s)
                w1 = await self._read(hm.CQ_BASE + 8 * s + 4)
                out.append(hm.Completion.unpack([w0, w1]))
                self.cq_head = (self.cq_head + 1) % (2 * depth)
            if out:
                await self._write(hm.CSR["CQ_HEAD"], self.cq_head)
        return out

    async def wait_cq(self, use_irq: bool = False) -> None:
        """Sleep until the CQ holds an entry (on ``cq_nonempty``, or on ``irq``)."""
        pin = self.dut.irq if use_irq else self.dut.cq_nonempty
        await ReadOnly()
        if not int(pin.value):
            await RisingEdge(pin)
