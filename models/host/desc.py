"""The command interface of the ``host`` family (docs/host.md sections 4 and 5): the CSR
map, the 256-bit descriptor, the 64-bit completion and the checks in their order.

Written from docs/host.md; the RTL front end is checked against :func:`check`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ..record import ParamError, as_int
from .params import HostParams

__all__ = [
    "CSR", "SQ_BASE", "CQ_BASE", "ID_VALUE", "FE_KERNEL", "MAGIC", "NOP", "MATMUL", "ST", "Descriptor",
    "Completion", "Limits", "checksum", "check", "out_rows", "esize", "hw_cfg",
]

#: CSR byte addresses (docs/host.md section 4).
CSR: dict[str, int] = {
    "ID": 0x000, "CTRL": 0x004, "STATUS": 0x008, "SQ_TAIL": 0x00C, "SQ_HEAD": 0x010, "CQ_HEAD": 0x014,
    "CQ_TAIL": 0x018, "IRQ_STATUS": 0x01C, "PERF_BUSY": 0x020, "PERF_TOTAL": 0x024, "PERF_DONE": 0x028,
    "PERF_ERR": 0x02C, "PERF_RD_BEATS": 0x030, "PERF_WR_BEATS": 0x034, "PERF_CQ_STALL": 0x038,
    "PERF_CTRL": 0x03C, "WGT_BASE": 0x040, "WGT_SIZE": 0x044, "MEM_LIMIT": 0x048, "HW_CFG": 0x04C,
    "EXP_SEQ": 0x050, "PERF_BUSY1": 0x054, "PERF_MEM_STALL": 0x058,
}
SQ_BASE, CQ_BASE = 0x400, 0x800
ID_VALUE = 0x4E4E5031
#: Kernel id of completions written by the front end (errors, NOP, ABORTED before dispatch).
FE_KERNEL = 15
MAGIC = 0xA5
NOP, MATMUL = 0, 1
#: Status code by name (HostParams.STATUS is the order).
ST: dict[str, int] = {n: i for i, n in enumerate(HostParams.STATUS)}

_M32 = (1 << 32) - 1


def _words32(words: list[int], n: int, what: str) -> list[int]:
    """``words`` as ``n`` ints of 32 bits, or a ValueError naming the length or the first
    word that is not an integer in ``[0, 2**32)`` (no silent wrap or truncation)."""
    if len(words) != n:
        raise ValueError(f"{what} is {n} words, got {len(words)}")
    out = []
    for i, x in enumerate(words):
        v = as_int(x, f"{what} word {i}")
        if not 0 <= v <= _M32:
            raise ValueError(f"{what} word {i} = {v:#x}: not a 32-bit word")
        out.append(v)
    return out


def esize(dtype: int) -> int:
    """Bytes per element: 1 for int8 (dtype 0), 2 for int16 (dtype 1)."""
    return 2 if dtype == 1 else 1


def checksum(words: list[int]) -> int:
    """XOR of bytes 0..27 and bytes 30, 31 of the descriptor (W7.chk)."""
    b = b"".join(int(w & _M32).to_bytes(4, "little") for w in words)
    x = 0
    for i in list(range(28)) + [30, 31]:
        x ^= b[i]
    return x


@dataclass(frozen=True)
class Descriptor:
    """The fields of docs/host.md section 5. ``rsvd*`` hold the reserved bits as they are
    in the words (0 in a well-formed descriptor); ``chk=None`` packs the right checksum."""

    opcode: int = MATMUL
    relu: int = 0
    pool: int = 0
    irq: int = 0
    dtype: int = 0
    tag: int = 0
    m: int = 1
    n: int = 4
    k: int = 4
    shift: int = 0
    act_addr: int = 0
    wgt_off: int = 0
    out_addr: int = 0
    mult: int = 1
    magic: int = MAGIC
    chk: int | None = None
    seq: int = 0
    rsvd0_7: int = 0
    rsvd0_hi: int = 0  # W0 [15:10]
    rsvd2: int = 0  # W2 [31:21]
    rsvd6: int = 0  # W6 [31:16]

    def words(self) -> list[int]:
        """The 8 little-endian 32-bit words."""
        w = [0] * 8
        w[0] = ((self.opcode & 0xF) | (self.relu & 1) << 4 | (self.pool & 1) << 5 | (self.irq & 1) << 6
                | (self.rsvd0_7 & 1) << 7 | (self.dtype & 3) << 8 | (self.rsvd0_hi & 0x3F) << 10
                | (self.tag & 0xFFFF) << 16)
        w[1] = (self.m & 0xFFFF) | (self.n & 0xFFFF) << 16
        w[2] = (self.k & 0xFFFF) | (self.shift & 0x1F) << 16 | (self.rsvd2 & 0x7FF) << 21
        w[3], w[4], w[5] = self.act_addr & _M32, self.wgt_off & _M32, self.out_addr & _M32
        w[6] = (self.mult & 0xFFFF) | (self.rsvd6 & 0xFFFF) << 16
        w[7] = (self.magic & 0xFF) | (self.seq & 0xFFFF) << 16
        chk = checksum(w) if self.chk is None else self.chk
        w[7] |= (chk & 0xFF) << 8
        return w

    @classmethod
    def unpack(cls, words: list[int]) -> "Descriptor":
        """Inverse of :meth:`words` (``chk`` is the stored byte).

        Raises:
            ValueError: not 8 words, or a word that is not an integer in ``[0, 2**32)``.
        """
        w = _words32(words, 8, "a descriptor")
        return cls(opcode=w[0] & 0xF, relu=w[0] >> 4 & 1, pool=w[0] >> 5 & 1, irq=w[0] >> 6 & 1,
                   rsvd0_7=w[0] >> 7 & 1, dtype=w[0] >> 8 & 3, rsvd0_hi=w[0] >> 10 & 0x3F, tag=w[0] >> 16,
                   m=w[1] & 0xFFFF, n=w[1] >> 16, k=w[2] & 0xFFFF, shift=w[2] >> 16 & 0x1F, rsvd2=w[2] >> 21,
                   act_addr=w[3], wgt_off=w[4], out_addr=w[5], mult=w[6] & 0xFFFF, rsvd6=w[6] >> 16,
                   magic=w[7] & 0xFF, chk=w[7] >> 8 & 0xFF, seq=w[7] >> 16)

    def with_(self, **kw: int) -> "Descriptor":
        """A copy with fields changed (``chk`` stays as given: ``None`` recomputes it)."""
        names = {f.name for f in fields(self)}
        bad = set(kw) - names
        if bad:
            raise ParamError(f"Descriptor: unknown field(s) {sorted(bad)}")
        return replace(self, **kw)

    @property
    def es(self) -> int:
        """Bytes per element."""
        return esize(self.dtype)


def out_rows(d: Descriptor) -> int:
    """Result rows M': M / 2 with pool_en, else M."""
    return d.m // 2 if d.pool else d.m


@dataclass(frozen=True)
class Completion:
    """One CQ entry (docs/host.md section 5). ``cycles`` is word 1 as read: a kernel's
    exec_cycles modulo ``2**HostParams.cnt_bits`` (its counter's width), 0 for the front
    end's completions."""

    tag: int
    status: int
    kernel: int
    cycles: int = 0

    def words(self) -> list[int]:
        """The 2 words of the entry."""
        return [(self.tag & 0xFFFF) | (self.status & 0xF) << 16 | (self.kernel & 0xF) << 20, self.cycles & _M32]

    @classmethod
    def unpack(cls, words: list[int]) -> "Completion":
        """Inverse of :meth:`words`.

        Raises:
            ValueError: not 2 words, a word that is not an integer in ``[0, 2**32)``, or a
                nonzero W0[31:24].
        """
        w0, w1 = _words32(words, 2, "a completion")
        if w0 >> 24:
            raise ValueError(f"completion word 0 = {w0:#010x}: bits [31:24] must be 0")
        return cls(w0 & 0xFFFF, w0 >> 16 & 0xF, w0 >> 20 & 0xF, w1)

    @property
    def status_name(self) -> str:
        """The status's name."""
        return HostParams.STATUS[self.status] if self.status < len(HostParams.STATUS) else f"RESERVED{self.status}"


@dataclass(frozen=True)
class Limits:
    """The CSR state the checks read: the expected sequence number, the weight region and
    the memory limit (MEM_LIMIT as stored: at most ``mem_bytes``)."""

    exp_seq: int = 0
    wgt_base: int = 0
    wgt_size: int = 0
    mem_limit: int = 0


def _overlap(a0: int, a1: int, b0: int, b1: int) -> bool:
    return a0 < a1 and b0 < b1 and a0 < b1 and b0 < a1


def check(words: list[int], lim: Limits, p: HostParams) -> int:
    """The status of a descriptor: the first failing check of docs/host.md section 5
    (``ST["OK"]`` when all pass). Vectorising is not needed: one descriptor at a time."""
    d = Descriptor.unpack(words)
    if d.magic != MAGIC:
        return ST["BAD_MAGIC"]
    if d.chk != checksum(words):
        return ST["BAD_CHECKSUM"]
    if d.seq != lim.exp_seq & 0xFFFF:
        return ST["BAD_SEQ"]
    if d.opcode not in (NOP, MATMUL):
        return ST["BAD_OPCODE"]
    if d.dtype > 1:
        return ST["BAD_DTYPE"]
    if d.rsvd0_7 or d.rsvd0_hi or d.rsvd2 or d.rsvd6:
        return ST["RSVD_NONZERO"]
    if d.opcode == NOP:
        return ST["OK"]
    es, epw = d.es, 4 // d.es
    if not (1 <= d.m <= p.m_max and 1 <= d.n <= p.n_max and 1 <= d.k <= p.k_max) or d.k % epw or d.n % epw \
            or (d.pool and d.m % 2):
        return ST["BAD_DIMS"]
    a0, a1 = d.act_addr, d.act_addr + d.m * d.k * es
    o0, o1 = d.out_addr, d.out_addr + out_rows(d) * d.n * es
    if d.act_addr % 4 or d.out_addr % 4 or a1 > lim.mem_limit or o1 > lim.mem_limit or _overlap(o0, o1, a0, a1) \
            or _overlap(o0, o1, lim.wgt_base, lim.wgt_base + lim.wgt_size):
        return ST["ADDR_RANGE"]
    if d.wgt_off % 4 or d.wgt_off + d.k * d.n * es > lim.wgt_size or lim.wgt_base + lim.wgt_size > lim.mem_limit:
        return ST["WGT_RANGE"]
    return ST["OK"]


def hw_cfg(p: HostParams) -> int:
    """The HW_CFG register's value."""
    return p.depth | p.n_kernels << 8 | (p.m_max - 1) << 10 | (p.k_max - 1) << 18 | (p.n_max - 1) << 26
