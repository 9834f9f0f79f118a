"""The host library of the ``host`` family, pure parts (docs/host.md section 10; spec 002
sections 2.3, 2.5 and 2.10): the task packet, fixed point, blocking, the device
allocator, the host <-> device memory map with "already transferred" flags and the
weights-once upload (claim 6), and the host-CPU backend of the debug switch.

numpy and the standard library only; every data path is vectorised numpy and exact.
The simulator driver (``verif/host/``) and :mod:`~lockstep.models.host.pipe` build on these.

Decisions where docs/host.md is silent:

* **K beyond** ``k_max`` **is refused** (:func:`split_task` raises :class:`SplitError`).
  Host partial sums are not exact: the kernel scales, saturates (and may ReLU/pool) each
  task's output to int8/int16, so the sum of two saturated partial results is not the
  saturated full sum. M beyond ``m_max`` and N beyond ``n_max`` are split into tasks
  (exact: rows and columns of a product are independent).
* :class:`DeviceAllocator` splits a larger free block (best fit, lowest address on a tie,
  taken from its low end) and coalesces neighbours on ``free``; a free block that reaches
  the fresh-memory boundary returns to fresh memory. The free state is therefore
  canonical, so a forward pass that frees what it allocated leaves the allocator as it
  found it, and the next pass gets the same addresses.
* :class:`MemoryMap` keeps a *reference* to each host block (the application's memory);
  the application reports rewrites with :meth:`MemoryMap.host_write` or
  :meth:`MemoryMap.invalidate`. :meth:`MemoryMap.pull` always transfers (results are
  new each time); :meth:`MemoryMap.push` sends only bytes not marked transferred.
* ``TaskPacket.wgt_off`` is the byte offset of the task's weights inside the single
  weight matrix (claim 6); :meth:`TaskPacket.descriptor` turns it into the descriptor's
  offset from ``WGT_BASE``.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..record import ParamError
from .params import HostParams
from . import MATMUL, Descriptor, esize, kernel_ref, sat_range

__all__ = [
    "ROUTES", "STAGES", "PACKET_STATUS", "TaskPacket", "TaskResult", "quantize", "dequantize", "scale_for",
    "pad_words", "tile", "untile", "SplitError", "TaskSplit", "split_task", "to_bytes", "AllocError",
    "OutOfDeviceMemory", "DeviceAllocator", "UnmappedAddress", "Transfer", "ArrayDevice", "WeightImage",
    "MemoryMap", "host_run", "Comparison", "compare",
]

#: Where a packet's task runs: the host CPU (the patent's debug/baseline path), the
#: accelerator, or both with a bit-exact comparison (spec 2.10).
ROUTES = ("host", "accel", "both")
#: The pipeline stages a packet passes through (spec 2.4).
STAGES = ("pre", "exec", "post")
#: Statuses a packet may hold: NEW, the library's OK / FAILED, or a hardware status name.
PACKET_STATUS = ("NEW", "FAILED") + HostParams.STATUS

# =====================================================================================
# The packet (spec 2.3)
# =====================================================================================


@dataclass(frozen=True)
class TaskResult:
    """What the application gets back for one task (spec 2.3: only part of the packet is
    kept; the pipeline-only fields are discarded)."""

    tag: int
    stream: int
    status: str
    data: np.ndarray | None
    error: str | None = None


@dataclass
class TaskPacket:
    """One task as it moves through the pipeline (spec 2.3 and 4.2).

    Attributes:
        tag: 16-bit id, unique while in flight.
        m, k, n: the matrix dimensions [patent] (A is M x K, W is K x N).
        stream: the application stream (packets of different streams are independent).
        seq: submission order within the stream.
        wgt_off: byte offset of the task's weights inside the single weight matrix
            [patent, claim 6].
        dev_in_addr, dev_out_addr: device byte addresses of the data and of the result
            [patent]; filled in by address translation.
        host_in_off, host_out_off: offsets into the application's host blocks [patent].
        dtype: 0 int8, 1 int16.
        frac, wfrac, ofrac: fraction bits of the activations, weights and result.
        scale_mult, scale_shift: the kernel's scaler (docs/host.md section 3).
        relu, pool, irq: descriptor flags.
        skip_pre, skip_post: the packet skips a stage (its data is already in hardware
            format) [patent].
        route: ``host``, ``accel`` or ``both`` (the debug switch, spec 2.10).
        kernel_id: the kernel that ran it (None before).
        status: ``NEW``, ``OK``, ``FAILED`` or a hardware status name.
        error: why it FAILED.
        payload_in, payload_out: the data (float before pre-processing, integers after;
            integers from the device, float after post-processing).
        t_enter, t_exit: per-stage times.
    """

    tag: int
    m: int
    k: int
    n: int
    stream: int = 0
    seq: int = 0
    wgt_off: int = 0
    dev_in_addr: int = 0
    dev_out_addr: int = 0
    host_in_off: int = 0
    host_out_off: int = 0
    dtype: int = 0
    frac: int = 0
    wfrac: int = 0
    ofrac: int = 0
    scale_mult: int = 1
    scale_shift: int = 0
    relu: bool = False
    pool: bool = False
    irq: bool = False
    skip_pre: bool = False
    skip_post: bool = False
    route: str = "accel"
    kernel_id: int | None = None
    status: str = "NEW"
    error: str | None = None
    payload_in: np.ndarray | None = None
    payload_out: np.ndarray | None = None
    t_enter: dict[str, float] = field(default_factory=dict)
    t_exit: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0 <= self.tag <= 0xFFFF:
            raise ParamError(f"TaskPacket.tag={self.tag}: must be a 16-bit value")
        if self.dtype not in (0, 1):
            raise ParamError(f"TaskPacket.dtype={self.dtype}: must be 0 (int8) or 1 (int16)")
        if self.route not in ROUTES:
            raise ParamError(f"TaskPacket.route={self.route!r}: must be one of {ROUTES}")
        if self.status not in PACKET_STATUS:
            raise ParamError(f"TaskPacket.status={self.status!r}: must be one of {PACKET_STATUS}")

    def set_status(self, status: str, error: str | None = None) -> None:
        """Set the status (checked against :data:`PACKET_STATUS`)."""
        if status not in PACKET_STATUS:
            raise ParamError(f"TaskPacket status {status!r}: must be one of {PACKET_STATUS}")
        self.status, self.error = status, error

    def fail(self, reason: str) -> None:
        """Mark the packet FAILED (a stage raised); it is still forwarded, never dropped."""
        self.set_status("FAILED", reason)

    def enter(self, stage: str, t: float) -> None:
        """Record that the packet entered ``stage`` at ``t``."""
        self.t_enter[stage] = t

    def leave(self, stage: str, t: float) -> None:
        """Record that the packet left ``stage`` at ``t``."""
        self.t_exit[stage] = t

    def to_result(self) -> TaskResult:
        """The part the application keeps: tag, stream, status, the output and the error."""
        return TaskResult(self.tag, self.stream, self.status, self.payload_out, self.error)

    def descriptor(self, seq: int, wgt_base: int, wgt_addr: int | None = None) -> Descriptor:
        """The MATMUL descriptor of this task (``models.host.Descriptor``).

        Args:
            seq: the descriptor's sequence number (the device's EXP_SEQ order).
            wgt_base: the WGT_BASE CSR value.
            wgt_addr: device byte address of the weight matrix (:class:`WeightImage`
                ``dev_addr``); defaults to ``wgt_base`` (the matrix starts the region).
        """
        addr = wgt_base if wgt_addr is None else wgt_addr
        off = addr - wgt_base + self.wgt_off
        if off < 0:
            raise ValueError(f"TaskPacket {self.tag}: the weights at {addr:#x}+{self.wgt_off} lie below "
                             f"WGT_BASE {wgt_base:#x}")
        return Descriptor(opcode=MATMUL, relu=int(self.relu), pool=int(self.pool), irq=int(self.irq),
                          dtype=self.dtype, tag=self.tag, m=self.m, n=self.n, k=self.k, shift=self.scale_shift,
                          act_addr=self.dev_in_addr, wgt_off=off, out_addr=self.dev_out_addr, mult=self.scale_mult,
                          seq=seq & 0xFFFF)


# =====================================================================================
# Fixed point (spec 2.4: 32-bit float -> 16- or 8-bit fixed point)
# =====================================================================================

def _check_frac(frac: int) -> int:
    if not isinstance(frac, (int, np.integer)) or isinstance(frac, bool) or not -64 <= frac <= 64:
        raise ParamError(f"frac={frac!r}: must be an int in [-64, 64]")
    return int(frac)


def quantize(x: Any, dtype: int, frac: int) -> tuple[np.ndarray, int]:
    """``x`` (float) to fixed point with ``frac`` fraction bits: round half to even,
    saturate to the dtype range, NaN -> 0, +-Inf saturate.

    Returns:
        ``(q, n_sat)``: q as int64 (same shape), and how many elements saturated
        (+-Inf included; NaN is not counted).

    Exactness: the input is converted to float64, which is exact for float32 (and a
    no-op for float64). ``ldexp`` by ``frac`` only changes the exponent, so it is exact
    whenever the result is a normal float64: for float32 input and ``|frac| <= 64``
    the magnitude stays within [2**-213, 2**193]. ``rint`` then rounds half to even
    exactly (IEEE round-to-nearest-even on an exactly representable value), and the
    saturation compares integers that float64 holds exactly. No float shortcut rounds
    twice.
    """
    frac = _check_frac(frac)
    lo, hi = sat_range(dtype)
    y = np.ldexp(np.asarray(x, dtype=np.float64), frac)
    nan = np.isnan(y)
    r = np.rint(np.where(nan, 0.0, y))
    sat = (r < lo) | (r > hi)
    q = np.clip(r, lo, hi).astype(np.int64)
    return q, int(np.count_nonzero(sat))


def dequantize(q: Any, dtype: int, frac: int) -> np.ndarray:
    """Fixed point with ``frac`` fraction bits back to float32 (exact: at most 16
    significant bits scaled by a power of two)."""
    frac = _check_frac(frac)
    lo, hi = sat_range(dtype)
    a = np.asarray(q)
    if a.size and (not np.issubdtype(a.dtype, np.integer) or a.min() < lo or a.max() > hi):
        raise ValueError(f"dequantize: values must be integers in [{lo}, {hi}] for dtype {dtype}")
    return np.ldexp(a.astype(np.float64), -frac).astype(np.float32)


def scale_for(frac: int, wfrac: int, ofrac: int) -> tuple[int, int]:
    """The scaler ``(scale_mult, scale_shift)`` that takes a product with ``frac + wfrac``
    fraction bits to ``ofrac`` fraction bits: ``(1, frac + wfrac - ofrac)``."""
    shift = frac + wfrac - ofrac
    if not 0 <= shift <= 31:
        raise ParamError(f"scale_for: frac {frac} + wfrac {wfrac} - ofrac {ofrac} = {shift}: must be in [0, 31] "
                         "(the scaler only shifts right, 5 bits)")
    return 1, shift


# =====================================================================================
# Blocking (docs/host.md section 2; spec 2.4: 32 x 64 blocks)
# =====================================================================================

def pad_words(n: int, dtype: int) -> int:
    """``n`` rounded up to whole 32-bit words of ``dtype`` elements (multiples of
    ``4 / es``: 4 for int8, 2 for int16)."""
    epw = 4 // esize(dtype)
    return -(-int(n) // epw) * epw


def tile(x: Any, rows: int = 32, cols: int = 64) -> np.ndarray:
    """A 2-D matrix as ``rows x cols`` blocks, zero-padded: shape
    ``(ceil(R/rows), ceil(C/cols), rows, cols)``; block ``[i, j]`` is
    ``x[i*rows:(i+1)*rows, j*cols:(j+1)*cols]``."""
    a = np.asarray(x)
    if a.ndim != 2:
        raise ValueError(f"tile: a 2-D matrix is needed, got shape {a.shape}")
    if rows < 1 or cols < 1:
        raise ValueError(f"tile: blocks of rows={rows} x cols={cols}: both must be at least 1")
    r, c = a.shape
    br, bc = -(-r // rows), -(-c // cols)
    p = np.zeros((br * rows, bc * cols), dtype=a.dtype)
    p[:r, :c] = a
    return p.reshape(br, rows, bc, cols).swapaxes(1, 2)


def untile(t: Any, shape: tuple[int, int]) -> np.ndarray:
    """Inverse of :func:`tile`: the blocks joined and cropped to ``shape``."""
    b = np.asarray(t)
    if b.ndim != 4:
        raise ValueError(f"untile: blocks of shape (BR, BC, rows, cols) are needed, got {b.shape}")
    br, bc, rows, cols = b.shape
    r, c = shape
    if not (0 <= r <= br * rows and 0 <= c <= bc * cols):
        raise ValueError(f"untile: shape {shape} is negative or larger than the {br * rows} x {bc * cols} the "
                         "blocks cover")
    return b.swapaxes(1, 2).reshape(br * rows, bc * cols)[:r, :c].copy()


class SplitError(ValueError):
    """A problem the hardware tasks cannot compute exactly."""


@dataclass(frozen=True)
class TaskSplit:
    """An (M x K) @ (K x N) problem as hardware tasks (:func:`split_task`).

    Attributes:
        m, k, n: the problem.
        dtype, pool: the element type and whether results are max-pooled over row pairs.
        kp, np_: K and N padded to whole words (zero padding: exact).
        row_blocks: ``(r0, r1)`` row ranges of A, each at most ``m_max`` (even with pool).
        col_blocks: ``(c0, c1)`` column ranges of the padded N, each at most ``n_max``.
    """

    m: int
    k: int
    n: int
    dtype: int
    pool: bool
    kp: int
    np_: int
    row_blocks: tuple[tuple[int, int], ...]
    col_blocks: tuple[tuple[int, int], ...]

    def tasks(self) -> Iterator[tuple[int, int, int]]:
        """``(row block, column block, task index)`` in task order (row-major)."""
        i = 0
        for rb in range(len(self.row_blocks)):
            for cb in range(len(self.col_blocks)):
                yield rb, cb, i
                i += 1

    @property
    def count(self) -> int:
        """Number of tasks."""
        return len(self.row_blocks) * len(self.col_blocks)

    def dims(self, rb: int, cb: int) -> tuple[int, int, int]:
        """``(M, K, N)`` of one task's descriptor."""
        r0, r1 = self.row_blocks[rb]
        c0, c1 = self.col_blocks[cb]
        return r1 - r0, self.kp, c1 - c0

    def pad_a(self, a: Any) -> np.ndarray:
        """A (M x K) zero-padded to M x kp."""
        a = np.asarray(a)
        if a.shape != (self.m, self.k):
            raise ValueError(f"pad_a: A is {a.shape}, the split is for {self.m} x {self.k}")
        out = np.zeros((self.m, self.kp), dtype=a.dtype)
        out[:, :self.k] = a
        return out

    def a_block(self, a: Any, rb: int) -> np.ndarray:
        """Row block ``rb`` of A, padded to kp columns, contiguous."""
        r0, r1 = self.row_blocks[rb]
        return np.ascontiguousarray(self.pad_a(a)[r0:r1])

    def panels(self, w: Any) -> list[np.ndarray]:
        """W (K x N) zero-padded to ``kp`` x ``np_`` and cut into contiguous column panels,
        one per column block: the kernel reads each task's K x N weights as one row-major
        matrix."""
        w = np.asarray(w)
        if w.shape != (self.k, self.n):
            raise ValueError(f"panels: W is {w.shape}, the split is for {self.k} x {self.n}")
        p = np.zeros((self.kp, self.np_), dtype=w.dtype)
        p[:self.k, :self.n] = w
        return [np.ascontiguousarray(p[:, c0:c1]) for c0, c1 in self.col_blocks]

    def join(self, outs: list[np.ndarray]) -> np.ndarray:
        """The tasks' results (in :meth:`tasks` order) as the M' x N result."""
        if len(outs) != self.count:
            raise ValueError(f"join: {len(outs)} results for {self.count} tasks")
        nc = len(self.col_blocks)
        rows = [np.concatenate(outs[i * nc:(i + 1) * nc], axis=1) for i in range(len(self.row_blocks))]
        return np.concatenate(rows, axis=0)[:, :self.n]


def split_task(m: int, k: int, n: int, p: HostParams, dtype: int = 0, pool: bool = False) -> TaskSplit:
    """Cut an (M x K) @ (K x N) problem into tasks within ``p.m_max``, ``p.k_max``,
    ``p.n_max``: K and N padded to whole words, rows in blocks of ``m_max`` (an even
    number with pool), columns in blocks of ``n_max``.

    Raises:
        SplitError: K (padded) above ``k_max`` (host partial sums would not be exact:
            each task's output is scaled and saturated), odd M with pool, or
            ``m_max`` = 1 with pool.
    """
    if min(m, k, n) < 1:
        raise SplitError(f"split_task: M, K, N = {m}, {k}, {n}: all must be at least 1")
    kp, np_ = pad_words(k, dtype), pad_words(n, dtype)
    if kp > p.k_max:
        raise SplitError(f"split_task: K = {k} (padded to {kp}) exceeds k_max = {p.k_max}; K is not split on the "
                         "host because each task's output is scaled and saturated to the dtype, so partial sums "
                         "would not be exact: split the layer's inner dimension in the network, or raise k_max")
    mb = p.m_max
    if pool:
        if m % 2:
            raise SplitError(f"split_task: M = {m} is odd; max-pooling takes row pairs")
        mb -= mb % 2
        if mb == 0:
            raise SplitError("split_task: pool needs m_max >= 2")
    rows = tuple((r, min(r + mb, m)) for r in range(0, m, mb))
    cols = tuple((c, min(c + p.n_max, np_)) for c in range(0, np_, p.n_max))
    return TaskSplit(m, k, n, dtype, bool(pool), kp, np_, rows, cols)


def to_bytes(mat: Any, dtype: int) -> np.ndarray:
    """A matrix as the device stores it (docs/host.md section 2): row-major,
    little-endian two's complement ``dtype`` elements, as a flat uint8 array. Values are
    checked against the dtype range (no silent wrap)."""
    a = np.asarray(mat, dtype=np.int64)
    lo, hi = sat_range(dtype)
    if a.size and (a.min() < lo or a.max() > hi):
        raise ValueError(f"to_bytes: values must be in [{lo}, {hi}] for dtype {dtype}")
    return a.astype("<i2" if esize(dtype) == 2 else np.int8).reshape(-1).view(np.uint8).copy()


# =====================================================================================
# Device allocator (spec 2.5)
# =====================================================================================

class AllocError(ValueError):
    """A bad free: double free, or an address that was never allocated."""


class OutOfDeviceMemory(MemoryError):
    """No free block and no fresh memory large enough."""


class DeviceAllocator:
    """Device memory allocator with a used and an unused set (spec 2.5).

    ``alloc`` tries the unused set first (best fit: the smallest free block that is large
    enough, lowest address on a tie; the block is split and its low end used), then fresh
    memory. Sizes round up to ``align`` bytes and addresses are ``align``-aligned. ``free``
    moves a block to the unused set, merging it with free neighbours; free memory that
    reaches the fresh-memory boundary becomes fresh memory again.

    Attributes:
        base, size, align: the managed range ``[base, base + size)`` and the alignment.
        used: address -> size of the live blocks (the used set).
    """

    def __init__(self, size: int, base: int = 0, align: int = 64) -> None:
        if align < 1 or align & (align - 1):
            raise ParamError(f"DeviceAllocator.align={align}: must be a power of two")
        if base % align or size < 0:
            raise ParamError(f"DeviceAllocator: base {base:#x} must be {align}-aligned and size {size} >= 0")
        self.base, self.size, self.align = base, size, align
        self.used: dict[int, int] = {}
        self._free: list[tuple[int, int]] = []   # (addr, size), sorted by addr, maximal
        self._top = base                         # fresh memory is [_top, base + size)
        self._freed: set[int] = set()            # freed and not handed out again: double-free detection
        self.peak = 0

    @property
    def unused(self) -> list[tuple[int, int]]:
        """The unused set: ``(addr, size)`` of the free blocks below fresh memory."""
        return list(self._free)

    @property
    def fresh(self) -> int:
        """Start of fresh (never-allocated or returned) memory."""
        return self._top

    @property
    def in_use(self) -> int:
        """Bytes in live blocks."""
        return sum(self.used.values())

    def alloc(self, nbytes: int) -> int:
        """A device byte address of ``nbytes`` (rounded up to ``align``) free bytes."""
        if nbytes < 1:
            raise ParamError(f"DeviceAllocator.alloc({nbytes}): the size must be at least 1 byte")
        n = -(-nbytes // self.align) * self.align
        best = None
        for i, (a, s) in enumerate(self._free):
            if s >= n and (best is None or s < self._free[best][1]):
                best = i
        if best is not None:
            a, s = self._free.pop(best)
            if s > n:
                self._free.insert(best, (a + n, s - n))
        else:
            if self._top + n > self.base + self.size:
                big = max((s for _, s in self._free), default=0)
                raise OutOfDeviceMemory(
                    f"device memory: cannot allocate {nbytes} bytes ({n} aligned): the largest free block is {big} "
                    f"bytes, fresh memory has {self.base + self.size - self._top}, {self.in_use} of {self.size} "
                    f"bytes are in use in {len(self.used)} blocks")
            a = self._top
            self._top += n
        self.used[a] = n
        self._freed.discard(a)
        self.peak = max(self.peak, self._top - self.base)
        return a

    def free(self, addr: int) -> None:
        """Move the block at ``addr`` to the unused set."""
        if addr not in self.used:
            inside = [a for a, s in self.used.items() if a < addr < a + s]
            if inside:
                raise AllocError(f"device memory: free of {addr:#x}, inside the live block at {inside[0]:#x} "
                                 "(free takes the address alloc returned)")
            if addr in self._freed:
                raise AllocError(f"device memory: double free of {addr:#x}")
            raise AllocError(f"device memory: free of {addr:#x}, which was never allocated")
        self._freed.add(addr)
        n = self.used.pop(addr)
        starts = [a for a, _ in self._free]
        i = bisect.bisect_left(starts, addr)
        lo, hi = addr, addr + n
        if i < len(self._free) and self._free[i][0] == hi:       # merge with the next free block
            hi += self._free.pop(i)[1]
        if i > 0 and sum(self._free[i - 1]) == lo:               # and with the previous one
            lo = self._free.pop(i - 1)[0]
            i -= 1
        if hi == self._top:
            self._top = lo
        else:
            self._free.insert(i, (lo, hi - lo))

    def size_of(self, addr: int) -> int:
        """Bytes of the live block at ``addr``."""
        if addr not in self.used:
            raise AllocError(f"device memory: {addr:#x} is not a live block")
        return self.used[addr]


# =====================================================================================
# Memory map (spec 2.5)
# =====================================================================================

class UnmappedAddress(LookupError):
    """A host (block, offset) or device address with no mapping."""


class Device(Protocol):
    """What :class:`MemoryMap` moves data with (optional): the host's DMA port."""

    def write(self, addr: int, data: np.ndarray) -> None: ...

    def read(self, addr: int, nbytes: int) -> np.ndarray: ...


@dataclass
class ArrayDevice:
    """Device memory as a uint8 numpy array (e.g. ``FrontModel.mem``)."""

    mem: np.ndarray

    def write(self, addr: int, data: np.ndarray) -> None:
        d = np.asarray(data, dtype=np.uint8)
        if addr < 0 or addr + d.size > self.mem.size:
            raise ValueError(f"ArrayDevice.write: [{addr:#x}, {addr + d.size:#x}) is outside {self.mem.size} bytes")
        self.mem[addr:addr + d.size] = d

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        if addr < 0 or addr + nbytes > self.mem.size:
            raise ValueError(f"ArrayDevice.read: [{addr:#x}, {addr + nbytes:#x}) is outside {self.mem.size} bytes")
        return self.mem[addr:addr + nbytes].copy()


@dataclass(frozen=True)
class Transfer:
    """One DMA transfer: ``direction`` ``h2d`` or ``d2h``."""

    direction: str
    block: Hashable
    offset: int
    dev_addr: int
    nbytes: int


@dataclass(frozen=True)
class WeightImage:
    """The single weight matrix on the device (claim 6).

    Attributes:
        block: its host block id in the map.
        dev_addr: device byte address (program WGT_BASE with it).
        nbytes: its size (program WGT_SIZE with it).
        offsets: key -> byte offset of that weight matrix (a packet's ``wgt_off``).
        moved: bytes transferred by this call (0 when the weights were already there).
    """

    block: Hashable
    dev_addr: int
    nbytes: int
    offsets: dict[Hashable, int]
    moved: int


@dataclass
class _Seg:
    off: int
    n: int
    dev: int
    owned: bool


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Half-open ``[lo, hi)`` runs of True in a 1-D bool array."""
    d = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))


class MemoryMap:
    """Host (block, offset) <-> device address, "already transferred" flags per host
    byte, and the DMA byte counters (spec 2.5).

    A host block is the application's memory (a C-contiguous numpy array, referenced,
    not copied). Sub-ranges of a block map to device ranges; the device ranges need not
    be contiguous and are allocated from ``alloc`` unless given.

    Attributes:
        alloc: the device allocator.
        device: moves the data when given (:class:`ArrayDevice`, or the simulator's DMA
            port); otherwise :meth:`push` and :meth:`pull` only return the transfers.
        h2d_bytes, d2h_bytes, h2d_count, d2h_count: transfer counters.
    """

    def __init__(self, alloc: DeviceAllocator, device: Device | None = None) -> None:
        self.alloc, self.device = alloc, device
        self._host: dict[Hashable, np.ndarray] = {}
        self._segs: dict[Hashable, list[_Seg]] = {}
        self._done: dict[Hashable, np.ndarray] = {}
        self._dev: list[tuple[int, int, Hashable, int]] = []   # (dev lo, dev hi, block, host off), sorted
        self._wimg: dict[Hashable, tuple[np.ndarray, dict[Hashable, int]]] = {}
        self.h2d_bytes = self.d2h_bytes = self.h2d_count = self.d2h_count = 0

    # ---- blocks and mappings -------------------------------------------------------
    def add_block(self, block: Hashable, host: np.ndarray) -> None:
        """Register a host block (not mapped yet)."""
        if block in self._host:
            raise ValueError(f"MemoryMap: host block {block!r} is already registered")
        if not isinstance(host, np.ndarray) or not host.flags.c_contiguous:
            raise ValueError(f"MemoryMap: host block {block!r} must be a C-contiguous numpy array")
        self._host[block] = host.reshape(-1).view(np.uint8)
        self._segs[block] = []
        self._done[block] = np.zeros(self._host[block].size, dtype=bool)

    def map(self, block: Hashable, offset: int = 0, nbytes: int | None = None, dev_addr: int | None = None) -> int:
        """Map ``[offset, offset + nbytes)`` of a registered block to device memory
        (allocated when ``dev_addr`` is None); returns the device address."""
        host = self._bytes(block)
        n = host.size - offset if nbytes is None else nbytes
        if n < 1 or offset < 0 or offset + n > host.size:
            raise ValueError(f"MemoryMap.map: [{offset}, {offset + n}) is not inside block {block!r} "
                             f"of {host.size} bytes")
        for s in self._segs[block]:
            if s.off < offset + n and offset < s.off + s.n:
                raise ValueError(f"MemoryMap.map: block {block!r} [{offset}, {offset + n}) is already mapped "
                                 f"(at [{s.off}, {s.off + s.n}))")
        owned = dev_addr is None
        dev = self.alloc.alloc(n) if owned else int(dev_addr)
        lo = [d[0] for d in self._dev]
        i = bisect.bisect_left(lo, dev)
        for j in (i - 1, i):
            if 0 <= j < len(self._dev) and self._dev[j][0] < dev + n and dev < self._dev[j][1]:
                if owned:
                    self.alloc.free(dev)
                raise ValueError(f"MemoryMap.map: device [{dev:#x}, {dev + n:#x}) overlaps the mapping of "
                                 f"block {self._dev[j][2]!r}")
        self._dev.insert(i, (dev, dev + n, block, offset))
        segs = self._segs[block]
        segs.append(_Seg(offset, n, dev, owned))
        segs.sort(key=lambda s: s.off)
        return dev

    def map_block(self, block: Hashable, host: np.ndarray, dev_addr: int | None = None) -> int:
        """Register a host block and map all of it; returns the device address."""
        self.add_block(block, host)
        return self.map(block, 0, None, dev_addr)

    def unmap(self, block: Hashable) -> None:
        """Forget a block; device memory the map allocated for it is freed."""
        for s in self._segs.pop(self._check(block)):
            if s.owned:
                self.alloc.free(s.dev)
        self._dev = [d for d in self._dev if d[2] != block]
        del self._host[block], self._done[block]
        self._wimg.pop(block, None)

    def blocks(self) -> list[Hashable]:
        """The registered host blocks."""
        return list(self._host)

    def _check(self, block: Hashable) -> Hashable:
        if block not in self._host:
            raise UnmappedAddress(f"host block {block!r} is not registered in the memory map")
        return block

    def _bytes(self, block: Hashable) -> np.ndarray:
        return self._host[self._check(block)]

    def host_bytes(self, block: Hashable) -> np.ndarray:
        """The bytes of a registered host block (a view: the application's memory, or
        the weight image :meth:`upload_weights_once` built)."""
        return self._bytes(block)

    def _range(self, block: Hashable, lo: int, hi: int | None) -> tuple[int, int]:
        size = self._bytes(block).size
        hi = size if hi is None else hi
        if not 0 <= lo <= hi <= size:
            raise ValueError(f"MemoryMap: [{lo}, {hi}) is not inside block {block!r} of {size} bytes")
        return lo, hi

    # ---- translation ---------------------------------------------------------------
    def translate(self, block: Hashable, offset: int) -> int:
        """The device address of host byte ``offset`` of ``block``."""
        for s in self._segs[self._check(block)]:
            if s.off <= offset < s.off + s.n:
                return s.dev + offset - s.off
        raise UnmappedAddress(f"host block {block!r} offset {offset}: not mapped to device memory")

    def reverse(self, dev_addr: int) -> tuple[Hashable, int]:
        """The host ``(block, offset)`` a device address maps to."""
        i = bisect.bisect_right([d[0] for d in self._dev], dev_addr) - 1
        if i >= 0 and dev_addr < self._dev[i][1]:
            lo, _, block, off = self._dev[i]
            return block, off + dev_addr - lo
        raise UnmappedAddress(f"device address {dev_addr:#x}: no host block maps there")

    def _pieces(self, block: Hashable, lo: int, hi: int) -> list[tuple[int, int, int]]:
        """``[lo, hi)`` cut at segment boundaries: ``(host off, nbytes, dev addr)``."""
        out, pos = [], lo
        for s in self._segs[block]:
            if s.off + s.n <= pos or s.off >= hi:
                continue
            if s.off > pos:
                break
            end = min(hi, s.off + s.n)
            out.append((pos, end - pos, s.dev + pos - s.off))
            pos = end
        if pos < hi:
            raise UnmappedAddress(f"host block {block!r} bytes [{pos}, {hi}): not mapped to device memory")
        return out

    # ---- transferred flags ---------------------------------------------------------
    def mark_transferred(self, block: Hashable, lo: int = 0, hi: int | None = None) -> None:
        """Flag host bytes ``[lo, hi)`` as equal on the device."""
        lo, hi = self._range(block, lo, hi)
        self._done[block][lo:hi] = True

    def is_transferred(self, block: Hashable, lo: int = 0, hi: int | None = None) -> bool:
        """All of ``[lo, hi)`` is flagged transferred."""
        lo, hi = self._range(block, lo, hi)
        return bool(self._done[block][lo:hi].all())

    def invalidate(self, block: Hashable, lo: int = 0, hi: int | None = None) -> None:
        """Clear the flags of ``[lo, hi)`` (the host or the device rewrote it)."""
        lo, hi = self._range(block, lo, hi)
        self._done[block][lo:hi] = False

    def host_write(self, block: Hashable, offset: int, data: Any) -> None:
        """The application rewrites host bytes: copy ``data`` (any array, as its bytes)
        in and clear the flags of the bytes that changed."""
        b = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        lo, hi = self._range(block, offset, offset + b.size)
        host = self._bytes(block)
        changed = host[lo:hi] != b
        host[lo:hi] = b
        self._done[block][lo:hi] &= ~changed

    # ---- transfers -----------------------------------------------------------------
    def push(self, block: Hashable, lo: int = 0, hi: int | None = None) -> list[Transfer]:
        """Host -> device for the bytes of ``[lo, hi)`` not flagged transferred; flags
        them. Returns the transfers (performed on :attr:`device` when there is one)."""
        lo, hi = self._range(block, lo, hi)
        host = self._bytes(block)
        out = []
        for r0, r1 in _runs(~self._done[block][lo:hi]):
            for off, n, dev in self._pieces(block, lo + r0, lo + r1):
                out.append(Transfer("h2d", block, off, dev, n))
        for t in out:
            if self.device is not None:
                self.device.write(t.dev_addr, host[t.offset:t.offset + t.nbytes])
            self._done[block][t.offset:t.offset + t.nbytes] = True
            self.h2d_bytes += t.nbytes
            self.h2d_count += 1
        return out

    def pull(self, block: Hashable, lo: int = 0, hi: int | None = None) -> list[Transfer]:
        """Device -> host for all of ``[lo, hi)`` (results are new each time); flags it
        transferred. Returns the transfers (performed when there is a device)."""
        lo, hi = self._range(block, lo, hi)
        host = self._bytes(block)
        out = [Transfer("d2h", block, off, dev, n) for off, n, dev in self._pieces(block, lo, hi)] if hi > lo else []
        for t in out:
            if self.device is not None:
                host[t.offset:t.offset + t.nbytes] = self.device.read(t.dev_addr, t.nbytes)
            self._done[block][t.offset:t.offset + t.nbytes] = True
            self.d2h_bytes += t.nbytes
            self.d2h_count += 1
        return out

    def upload_weights_once(self, weights: Mapping[Hashable, Any], dtype: int,
                            block: Hashable = "weights") -> WeightImage:
        """All layers' weights as one matrix on the device (claim 6): each matrix in
        device layout (:func:`to_bytes`), padded to whole words, one after another; one
        mapping, one transfer. A later call with the same weights moves nothing; changed
        bytes (same layout) are re-sent alone; a new layout is a new image.

        Returns:
            the image: device address, size, the per-key byte offsets (``wgt_off``) and
            the bytes moved by this call.
        """
        parts, offsets, pos = [], {}, 0
        for key, w in weights.items():
            b = to_bytes(w, dtype)
            pad = -b.size % 4
            parts.append(np.concatenate((b, np.zeros(pad, np.uint8))) if pad else b)
            offsets[key] = pos
            pos += b.size + pad
        if pos == 0:
            raise ValueError("upload_weights_once: no weights")
        blob = np.concatenate(parts)
        before = self.h2d_bytes
        old = self._wimg.get(block)
        if old is not None and (old[0].size != blob.size or old[1] != offsets):
            self.unmap(block)
            old = None
        if old is None:
            host = blob.copy()
            self.map_block(block, host)
            self._wimg[block] = (host, offsets)
        else:
            self.host_write(block, 0, blob)
        self.push(block)
        return WeightImage(block, self.translate(block, 0), blob.size, dict(offsets), self.h2d_bytes - before)


# =====================================================================================
# The debug switch (spec 2.10): the host-CPU backend and the comparison
# =====================================================================================

def host_run(packet: TaskPacket, weights: Any) -> np.ndarray:
    """The host-CPU backend: ``models.host.kernel_ref`` on the quantised data. Float
    ``payload_in`` / ``weights`` are quantised first (``frac`` / ``wfrac`` bits)."""
    a, w = packet.payload_in, np.asarray(weights)
    if a is None:
        raise ValueError(f"host_run: packet {packet.tag} has no payload_in")
    a = np.asarray(a)
    if np.issubdtype(a.dtype, np.floating):
        a = quantize(a, packet.dtype, packet.frac)[0]
    if np.issubdtype(w.dtype, np.floating):
        w = quantize(w, packet.dtype, packet.wfrac)[0]
    return kernel_ref(a, w, packet.descriptor(packet.seq, 0))


@dataclass(frozen=True)
class Comparison:
    """A bit-exact comparison: ``ok``, how many elements differ, the first difference
    ``(index, a, b)`` in row-major order, and a message."""

    ok: bool
    n_diff: int
    first: tuple[tuple[int, ...], int, int] | None
    message: str

    def __bool__(self) -> bool:
        return self.ok


def compare(a: Any, b: Any) -> Comparison:
    """Compare two integer results bit-exactly (route ``both``: accelerator vs host)."""
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape:
        return Comparison(False, max(x.size, y.size), None, f"shapes differ: {x.shape} vs {y.shape}")
    diff = x.astype(np.int64) != y.astype(np.int64)
    n = int(np.count_nonzero(diff))
    if n == 0:
        return Comparison(True, 0, None, f"equal ({x.size} elements)")
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff.reshape(-1))), x.shape))
    first = (idx, int(x[idx]), int(y[idx]))
    return Comparison(False, n, first, f"{n} of {x.size} elements differ; first at {idx}: {first[1]} vs {first[2]}")
