"""Core of the ``sched`` golden model: entries, periodic blocks, programs, the executor.

Import these names through :mod:`lockstep.models.sched`, which re-exports them and
documents the semantics (docs/sched.md sections 2-6 and 8) and every decision taken
where the contract is silent.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import deque
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np

from ..record import ParamError, show
from .params import FabricParams

__all__ = [
    "ALU_OPS",
    "ERR",
    "MAC_OPS",
    "N_UNITS",
    "COMM_TILE",
    "P_FIFO",
    "ERR_FIFO_OVF",
    "comm_tile",
    "SRC_MAC",
    "entry_busy_len",
    "to_signed",
    "ERR_BUSY",
    "ERR_COLLISION",
    "ERR_DECOMP",
    "ERR_DESYNC",
    "ERR_LATE_SCHED",
    "ERR_MISSED",
    "ERR_OPCODE",
    "ERR_OVERFLOW",
    "ERR_TAP_IDLE",
    "ERR_UNDERFLOW",
    "ERR_WCONF",
    "EncodeError",
    "Entry",
    "ErrorCause",
    "ExpandedEntry",
    "OPS",
    "OP_NAMES",
    "PORT_NAMES",
    "PORT_OPS",
    "Program",
    "ProgramError",
    "RESERVED_OPS",
    "Run",
    "SRC_ALU",
    "compress_periodic",
    "decode",
    "decode_err",
    "encode",
    "entry_units",
    "execute",
    "expand",
    "opcode_problem",
    "unwrap_times",
]

# ---- opcodes, ports, error bits -----------------------------------------------------------
#: Mnemonic -> opcode (docs/sched.md section 3; the table is ``FabricParams.OPCODES``).
OPS: dict[str, int] = dict(FabricParams.OPCODES)
#: Opcode -> mnemonic.
OP_NAMES: dict[int, str] = {v: k for k, v in OPS.items()}
#: Opcodes reserved without a MAC array (LDW, SWPW, MATVEC, VPU, CHECK); they raise OPCODE
#: when ``params.k == 0`` (CHECK and 0xD always).
RESERVED_OPS: frozenset[int] = frozenset(range(16)) - frozenset(OPS.values())
#: MAC-array and VPU opcodes (section 11): legal only when ``params.k > 0``.
MAC_OPS: dict[str, int] = dict(FabricParams.MAC_OPCODES)
OP_NAMES.update({v: k for k, v in MAC_OPS.items()})
#: Write source number of MAC lane ``c`` is ``SRC_MAC + c``.
SRC_MAC = 4
#: Port numbers by name: 0, 1, 2; 3 is the external FIFO (RECV on the communication
#: interface's tile only; illegal elsewhere).
PORT_NAMES: tuple[str, ...] = ("prev", "next", "bus", "fifo")

_NOP, _SEND, _RECV, _TAP = OPS["NOP"], OPS["SEND"], OPS["RECV"], OPS["TAP"]
_VADD, _VMUL, _DOT = OPS["VADD"], OPS["VMUL"], OPS["DOT"]
_FWD, _HALT, _PERIODIC = OPS["FWD"], OPS["HALT"], OPS["PERIODIC"]
_LDW, _SWPW, _MATVEC, _VPU = MAC_OPS["LDW"], MAC_OPS["SWPW"], MAC_OPS["MATVEC"], MAC_OPS["VPU"]
_MATVR = MAC_OPS["MATVR"]
#: The two matrix-vector opcodes (MATVR = MATVEC whose memory write goes through the VPU).
MV_OPS: frozenset[int] = frozenset({_MATVEC, _MATVR})
_MAC_SET = frozenset(MAC_OPS.values())
#: The communication interface's opcode (section 11): legal on tile ``COMM_TILE`` with ``comm``.
_CHECK = FabricParams.COMM_OPCODES["CHECK"]
OP_NAMES[_CHECK] = "CHECK"
COMM_TILE = FabricParams.COMM_TILE
P_FIFO = FabricParams.P_FIFO
#: Opcodes whose PORT field selects a link port.
PORT_OPS: frozenset[int] = frozenset({_SEND, _RECV, _TAP, _FWD})
#: Opcodes executed by the ALU.
ALU_OPS: frozenset[int] = frozenset({_VADD, _VMUL, _DOT})
#: Write source number of the ALU (sources 0..2 are the ports).
SRC_ALU = 3

#: Error-bit name -> bit value (docs/sched.md section 6; ``FabricParams.ERR_NAMES``).
ERR: dict[str, int] = {name: 1 << i for i, name in enumerate(FabricParams.ERR_NAMES)}
ERR_MISSED = ERR["MISSED"]
ERR_OPCODE = ERR["OPCODE"]
ERR_BUSY = ERR["BUSY"]
ERR_UNDERFLOW = ERR["UNDERFLOW"]
ERR_OVERFLOW = ERR["OVERFLOW"]
ERR_COLLISION = ERR["COLLISION"]
ERR_WCONF = ERR["WCONF"]
ERR_DECOMP = ERR["DECOMP"]
ERR_LATE_SCHED = ERR["LATE_SCHED"]
ERR_DESYNC = ERR["DESYNC"]
ERR_TAP_IDLE = ERR["TAP_IDLE"]
ERR_FIFO_OVF = ERR["FIFO_OVF"]

# unit indices of a tile: out[0..2], in[0..2], the ALU, the weight loader, the MAC array,
# the external FIFO's read side (tile COMM_TILE with comm)
_U_OUT = 0
_U_IN = 3
_U_ALU = 6
_U_WLOAD = 7
_U_MAC = 8
_U_FIFO = 9
N_UNITS = 10
_UNIT_NAMES = ("out[prev]", "out[next]", "out[bus]", "in[prev]", "in[next]", "in[bus]", "alu", "wload", "mac",
               "fifo")


class EncodeError(ParamError):
    """An entry field that does not fit its bit field, or a word that is not an entry."""


class ProgramError(ParamError):
    """A malformed :class:`Program` (shape, word range, data address); names tile/entry."""


def decode_err(bits: int) -> list[str]:
    """Names of the error bits set in ``bits``, bit 0 first.

    Example:
        >>> decode_err(ERR_MISSED | ERR_WCONF)
        ['MISSED', 'WCONF']
    """
    return [n for n, v in ERR.items() if bits & v]


def _check_params(params: Any) -> FabricParams:
    if not isinstance(params, FabricParams):
        raise ParamError(f"params: expected a FabricParams, got {type(params).__name__}")
    return params


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


# ---- entries ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One schedule entry, field by field (docs/sched.md section 2).

    Attributes:
        t: scheduled counter value ``T`` (in a periodic body: the phase offset ``d``).
        op: opcode, 0..15 (see :data:`OPS`).
        port: 0 = prev, 1 = next, 2 = bus (3 is illegal).
        unit: reserved, must be 0.
        a: source address; PERIODIC: the period ``P``.
        b: second source address; FWD: the source port in bits [1:0]; PERIODIC: ``n_body``.
        d: destination address.
        len: the element count minus one, as encoded (``N = len + 1``); PERIODIC:
            ``reps - 1``.
    """

    t: int
    op: int
    port: int = 0
    unit: int = 0
    a: int = 0
    b: int = 0
    d: int = 0
    len: int = 0

    @property
    def n(self) -> int:
        """Element count ``N = len + 1``."""
        return self.len + 1

    def replace(self, **changes: int) -> "Entry":
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def __str__(self) -> str:
        name = OP_NAMES.get(self.op, f"OP{self.op}")
        return (f"@{self.t} {name} port={self.port} unit={self.unit} a={self.a} b={self.b} "
                f"d={self.d} len={self.n}")


@functools.lru_cache(maxsize=None)
def _layout(params: FabricParams) -> tuple[tuple[str, int, int], ...]:
    """``(field, shift, width)`` for every entry field, LSB field last in ENTRY_FIELDS."""
    out = []
    pos = 0
    for name in reversed(FabricParams.ENTRY_FIELDS):
        w = params.field_width(name)
        out.append((name, pos, w))
        pos += w
    return tuple(reversed(out))


def encode(entry: Entry, params: FabricParams) -> int:
    """Pack an entry into one ``ew``-bit schedule word (``T|OP|PORT|UNIT|A|B|D|LEN``).

    Args:
        entry: the entry; every field must be an int in ``[0, 2**width)``.
        params: the fabric parameters (field widths).

    Returns:
        The word as a Python int.

    Raises:
        EncodeError: a field out of range or not an int, naming the field.

    Example:
        >>> p = FabricParams()
        >>> hex(encode(Entry(t=1, op=OPS["SEND"], port=1, a=0x10, len=9), p))
        '0x11410000009'
    """
    _check_params(params)
    if not isinstance(entry, Entry):
        raise EncodeError(f"encode: expected an Entry, got {type(entry).__name__}")
    word = 0
    for name, shift, width in _layout(params):
        v = getattr(entry, name)
        if not _is_int(v):
            raise EncodeError(f"entry field {name}={v!r}: must be an int")
        v = int(v)
        if not 0 <= v < (1 << width):
            shown = v + 1 if name == "len" else v
            what = "len (element count N)" if name == "len" else name
            hi = (1 << width) if name == "len" else (1 << width) - 1
            lo = 1 if name == "len" else 0
            raise EncodeError(f"entry field {what}={show(shown)} out of range [{lo}, {hi}] ({width} bits)")
        word |= v << shift
    return word


def decode(word: int, params: FabricParams) -> Entry:
    """Unpack one schedule word (inverse of :func:`encode`).

    Raises:
        EncodeError: ``word`` is not an int in ``[0, 2**ew)``.
    """
    _check_params(params)
    if not _is_int(word):
        raise EncodeError(f"decode: word {word!r} is not an int")
    word = int(word)
    if not 0 <= word < (1 << params.ew):
        raise EncodeError(f"decode: word {word:#x} does not fit {params.ew} bits")
    return Entry(**{name: (word >> shift) & ((1 << width) - 1) for name, shift, width in _layout(params)})


def comm_tile(params: FabricParams, tile: int) -> bool:
    """Does ``tile`` hold the communication interface (section 11)?"""
    return params.comm and tile == COMM_TILE


def opcode_problem(entry: Entry, params: FabricParams, tile: int = -1) -> str | None:
    """Why an entry of ``tile`` raises OPCODE when it reaches issue (None if it does not).

    The conditions of docs/sched.md section 3: a reserved opcode; UNIT != 0 (any opcode);
    PORT 3 on SEND, RECV, TAP or FWD (except RECV on the FIFO of the communication
    interface's tile); RECV on port 2 (the bus has no input buffer); port 2 without a bus
    (PORT of those opcodes, and the FWD source); a FWD source port of 3. Section 11 adds
    the MAC opcodes' rules and CHECK's (only on the interface's tile, PORT 3, mode 0 or
    1). ``tile`` -1 means a tile without the interface.
    """
    why = []
    op = entry.op
    ct = comm_tile(params, tile)
    if op in RESERVED_OPS and not (op in _MAC_SET and params.k) and not (op == _CHECK and ct):
        why.append(f"reserved opcode {op:#x}" + (" (no MAC array: k = 0)" if op in _MAC_SET else "")
                   + (" (CHECK: not the communication interface's tile)" if op == _CHECK else ""))
    if op == _CHECK and ct:
        if entry.port != P_FIFO:
            why.append(f"CHECK port={entry.port} (must be {P_FIFO}, the FIFO)")
        if entry.b > 1:
            why.append(f"CHECK mode b={entry.b} (0 = suspend, 1 = pad)")
    if op == _LDW and params.k and entry.len != params.k - 1:
        why.append(f"LDW len={entry.n} (must be k = {params.k})")
    if op == _MATVR and params.k and entry.port & 2:
        why.append("MATVR with PORT[1] (psum_out): MATVR writes memory")
    if op == _PERIODIC:
        why.append("PERIODIC header reached issue")
    if entry.unit != 0:
        why.append(f"UNIT={entry.unit} (must be 0)")
    if op in PORT_OPS:
        if entry.port == 3 and not (op == _RECV and ct):
            why.append("PORT 3")
        elif entry.port == 2 and not params.bus:
            why.append("bus port without a bus")
        elif entry.port == 2 and op == _RECV:
            why.append("RECV on the bus (the bus input has no buffer)")
    if op == _FWD:
        src = entry.b & 3
        if src == 3:
            why.append("FWD source port 3")
        elif src == 2 and not params.bus:
            why.append("FWD source is the bus, which is absent")
    return "; ".join(why) if why else None


def entry_units(entry: Entry, params: FabricParams | None = None) -> tuple[int, ...]:
    """Unit indices an entry occupies for ``[n, n+busy_len-1]`` (out 0..2, in 3..5, ALU 6,
    wload 7, mac 8; see :func:`entry_busy_len`).

    Ports numbered 3 address no unit (such entries raise OPCODE and never issue). The
    MAC opcodes occupy units only with ``params.k > 0`` (without params, or with
    ``k == 0``, they are reserved and occupy nothing, as before section 11).
    """
    op = entry.op
    if op in _MAC_SET:
        if params is None or not params.k:
            return ()
        if op == _LDW:
            return (_U_WLOAD,)
        if op == _SWPW:
            return (_U_WLOAD, _U_MAC)
        if op in MV_OPS:
            return (_U_MAC,)
        return (_U_ALU,)
    if op == _SEND:
        return (_U_OUT + entry.port,) if entry.port < 3 else ()
    if op == _RECV and entry.port == P_FIFO:
        return (_U_FIFO,) if params is not None and params.comm else ()
    if op in (_RECV, _TAP):
        return (_U_IN + entry.port,) if entry.port < 3 else ()
    if op == _FWD:
        u = []
        if entry.port < 3:
            u.append(_U_OUT + entry.port)
        if entry.b & 3 < 3:
            u.append(_U_IN + (entry.b & 3))
        return tuple(u)
    if op in ALU_OPS:
        return (_U_ALU,)
    return ()


def entry_busy_len(entry: Entry) -> int:
    """Cycles an entry keeps its units busy: 1 for SWPW, else ``N`` (LDW: ``N = k``)."""
    return 1 if entry.op == _SWPW else entry.n


def to_signed(v: int, bits: int) -> int:
    """The two's-complement value of the low ``bits`` bits of ``v``."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


# ---- periodic blocks ------------------------------------------------------------------------
class ExpandedEntry(NamedTuple):
    """One entry of the expanded stream (docs/sched.md section 5).

    Attributes:
        entry: the entry with its absolute ``T`` (mod ``2**cw``).
        poison: a poison entry standing for a malformed periodic block: it raises DECOMP
            (and halts) when ``count == T``, or MISSED if ``T`` is already past.
        src: index of the schedule word it comes from (the header for a bad header).
        rep: repetition index inside a periodic block (None outside a block).
        header: index of the block's header word (None outside a block).
        first_in_block: the first expanded entry of a well-formed header (its fetch costs
            the extra header read; rule HDR_GAP).
        reason: for a poison entry, what is malformed.
    """

    entry: Entry
    poison: bool
    src: int
    rep: int | None = None
    header: int | None = None
    first_in_block: bool = False
    reason: str | None = None


def _header_problem(e: Entry, h: int, n_words: int) -> str | None:
    if e.a == 0:
        return "period P = 0"
    if e.b == 0:
        return "n_body = 0"
    if e.b > FabricParams.BODY_MAX:
        return f"n_body = {e.b} > BODY_MAX = {FabricParams.BODY_MAX}"
    if h + e.b >= n_words:
        return f"body of {e.b} words runs past the last schedule word ({n_words - 1})"
    return None


def _body_problem(be: Entry, j: int, prev_d: int | None, period: int) -> str | None:
    if be.op == _PERIODIC:
        return f"body entry {j} is a PERIODIC header"
    if be.t >= period:
        return f"body entry {j}: phase d = {be.t} >= period {period}"
    if prev_d is not None and be.t <= prev_d:
        return f"body entry {j}: phase d = {be.t} <= previous phase {prev_d}"
    return None


def expand(words: Sequence[int], params: FabricParams) -> list[ExpandedEntry]:
    """Expand a schedule image into the stream the sequencer issues from.

    Plain words pass through. A PERIODIC header (``T = base``, ``A = P``,
    ``B = n_body``, ``LEN = reps - 1``) and its ``n_body`` body words emit, for
    ``r in range(reps)`` and each body entry ``j``, the body entry with
    ``T = (base + r*P + d_j) mod 2**cw``. Malformed blocks give poison entries:

    * bad header (``P == 0``, ``n_body == 0``, ``n_body > BODY_MAX``, or a body that runs
      past the last word of ``words``): one poison entry with ``T = base``; expansion
      continues with the word after the header, as an ordinary entry;
    * bad body entry (``d >= P``, ``d <= d_prev``, or OP = PERIODIC): the entries before
      it, then a poison entry at ``(base + r*P + d)`` for its own ``r`` and ``d``; the rest
      of the block is dropped and expansion continues after the block.

    Args:
        words: schedule words (normally the whole ``sd``-word image).
        params: fabric parameters.

    Returns:
        The expanded entries, in issue order.
    """
    _check_params(params)
    mask = (1 << params.cw) - 1
    ents = []
    for i, w in enumerate(words):
        try:
            ents.append(decode(w, params))
        except EncodeError as ex:
            raise EncodeError(f"schedule word {i}: {ex}") from None
    n = len(ents)
    out: list[ExpandedEntry] = []
    h = 0
    while h < n:
        e = ents[h]
        if e.op != _PERIODIC:
            out.append(ExpandedEntry(e, False, h))
            h += 1
            continue
        why = _header_problem(e, h, n)
        if why is not None:
            out.append(ExpandedEntry(e, True, h, None, None, False, f"bad header at word {h}: {why}"))
            h += 1
            continue
        base, period, nb, reps = e.t, e.a, e.b, e.len + 1
        body = ents[h + 1:h + 1 + nb]
        bad_j, bad_why = None, None
        prev = None
        for j, be in enumerate(body):
            bad_why = _body_problem(be, j, prev, period)
            if bad_why is not None:
                bad_j = j
                break
            prev = be.t
        done = False
        for r in range(reps):
            for j, be in enumerate(body):
                t = (base + r * period + be.t) & mask
                first = r == 0 and j == 0
                if j == bad_j:
                    out.append(ExpandedEntry(be.replace(t=t), True, h + 1 + j, r, h, first,
                                             f"bad body in block at word {h}: {bad_why}"))
                    done = True
                    break
                out.append(ExpandedEntry(be.replace(t=t), False, h + 1 + j, r, h, first))
            if done:
                break
        h += 1 + nb
    return out


def unwrap_times(stream: Sequence[ExpandedEntry], params: FabricParams) -> list[int]:
    """Unwrapped issue cycles of an expanded stream (the first entry's ``T`` as is).

    Each next entry is placed ``(T_next - T) mod 2**cw`` cycles after the previous one,
    which is its issue cycle whenever the stream obeys the ORDER rule.
    """
    mask = (1 << params.cw) - 1
    us: list[int] = []
    for i, x in enumerate(stream):
        if i == 0:
            us.append(x.entry.t)
        else:
            us.append(us[-1] + ((x.entry.t - stream[i - 1].entry.t) & mask))
    return us


def compress_periodic(entries: Sequence[Entry], params: FabricParams, *, hdr_gap: bool = True) -> list[Entry]:
    """Find periodic runs in an expanded stream and emit PERIODIC blocks for them.

    Greedy: at each position, the block (``n_body <= BODY_MAX``, ``reps <= 256``,
    ``1 <= P <= 2**aw - 1``, phases strictly increasing and ``< P``) that saves the most
    words is taken. ``[x.entry for x in expand(encode(compress_periodic(s)))] == s`` for
    every stream without PERIODIC entries.

    Args:
        entries: expanded entries with absolute ``T`` values.
        params: fabric parameters.
        hdr_gap: only start a block at least 2 counts after the previous entry (and, for a
            block at the start, at ``T >= FETCH_LEAD + 1``), so a legal stream stays legal
            (rule HDR_GAP).

    Returns:
        Entries to encode: plain entries, and headers followed by their bodies (body
        ``t`` fields hold the phase offsets).

    Raises:
        ValueError: an entry with OP = PERIODIC (not an expanded stream).
    """
    _check_params(params)
    ents = list(entries)
    for i, e in enumerate(ents):
        if not isinstance(e, Entry):
            raise ValueError(f"compress_periodic: item {i} is not an Entry")
        if e.op == _PERIODIC:
            raise ValueError(f"compress_periodic: entry {i} is a PERIODIC header; expected an expanded stream")
    mask = (1 << params.cw) - 1
    pmax = (1 << params.aw) - 1
    n = len(ents)
    ts = [e.t for e in ents]

    def same(x: Entry, y: Entry) -> bool:
        return (x.op, x.port, x.unit, x.a, x.b, x.d, x.len) == (y.op, y.port, y.unit, y.a, y.b, y.d, y.len)

    out: list[Entry] = []
    i = 0
    while i < n:
        best = None
        if hdr_gap:
            ok_start = ((ts[i] - ts[i - 1]) & mask) >= 2 if i > 0 else ts[0] >= FabricParams.FETCH_LEAD + 1
        else:
            ok_start = True
        if ok_start:
            for nb in range(1, min(FabricParams.BODY_MAX, (n - i) // 2) + 1):
                period = (ts[i + nb] - ts[i]) & mask
                if not 1 <= period <= pmax:
                    continue
                ds = [(ts[i + j] - ts[i]) & mask for j in range(nb)]
                if any(ds[j] <= ds[j - 1] for j in range(1, nb)) or ds[-1] >= period:
                    continue
                reps = 1
                while reps < 256 and i + (reps + 1) * nb <= n:
                    k0 = i + reps * nb
                    if all(same(ents[k0 + j], ents[i + j]) and ts[k0 + j] == (ts[i + j] + reps * period) & mask
                           for j in range(nb)):
                        reps += 1
                    else:
                        break
                saving = nb * reps - (1 + nb)
                if reps >= 2 and saving > 0 and (best is None or saving > best[0]):
                    best = (saving, nb, period, reps, ds)
        if best is None:
            out.append(ents[i])
            i += 1
            continue
        _, nb, period, reps, ds = best
        out.append(Entry(t=ts[i], op=_PERIODIC, a=period, b=nb, len=reps - 1))
        for j in range(nb):
            out.append(ents[i + j].replace(t=ds[j]))
        i += nb * reps
    return out


# ---- programs -------------------------------------------------------------------------------
def _norm_data(d: Any, tile: int, params: FabricParams) -> dict[int, int]:
    words = params.words
    dmask = (1 << params.dw) - 1
    if d is None:
        return {}
    if isinstance(d, dict):
        items = list(d.items())
    else:
        arr = list(np.asarray(d).ravel().tolist()) if isinstance(d, np.ndarray) else list(d)
        if len(arr) > words:
            raise ProgramError(f"tile {tile}: data image has {len(arr)} words, more than 2**aw = {words}")
        items = list(enumerate(arr))
    out: dict[int, int] = {}
    for addr, v in items:
        if not _is_int(addr) or not 0 <= int(addr) < words:
            raise ProgramError(f"tile {tile}: data address {show(addr)} outside [0, {words - 1}]")
        if not _is_int(v):
            raise ProgramError(f"tile {tile}: data word at address {addr} is {v!r}, not an int")
        v = int(v) & dmask
        if v:
            out[int(addr)] = v
    return out


@dataclass(eq=False)
class Program:
    """A whole-fabric program: per tile a schedule (entry words) and initial data.

    Attributes:
        params: the fabric parameters.
        schedules: ``nt`` lists of entry words (a list longer than ``sd`` is kept so the
            linter can report SIZE, but :meth:`schedule_image` refuses it).
        data: ``nt`` initial data memories, each a dict ``{address: word}`` or a
            sequence (index = address). Normalised to dicts of nonzero words, each
            reduced modulo ``2**dw``.
        meta: free-form information (the random generator stores its plan here, the
            directed builders their expected results). Not part of equality.

    Two programs are equal when their params, schedule word lists and data images are.

    Raises:
        ProgramError: wrong number of tiles, a word outside ``[0, 2**ew)``, a data
            address outside the memory.
    """

    params: FabricParams
    schedules: list[list[int]]
    data: list[dict[int, int]] | None = None
    meta: dict | None = None

    def __post_init__(self) -> None:
        p = _check_params(self.params)
        if len(self.schedules) != p.nt:
            raise ProgramError(f"Program: {len(self.schedules)} schedules for nt = {p.nt} tiles")
        scheds = []
        top = 1 << p.ew
        for t, s in enumerate(self.schedules):
            ws = []
            for i, w in enumerate(s):
                if not _is_int(w) or not 0 <= int(w) < top:
                    raise ProgramError(f"tile {t} entry {i}: word {show(w)} is not an int in [0, 2**{p.ew})")
                ws.append(int(w))
            scheds.append(ws)
        self.schedules = scheds
        data = self.data if self.data is not None else [None] * p.nt
        if len(data) != p.nt:
            raise ProgramError(f"Program: {len(data)} data images for nt = {p.nt} tiles")
        self.data = [_norm_data(d, t, p) for t, d in enumerate(data)]

    @classmethod
    def empty(cls, params: FabricParams) -> "Program":
        """A program with empty schedules and zero data on every tile."""
        return cls(params, [[] for _ in range(params.nt)])

    def _tile(self, tile: int) -> int:
        if not _is_int(tile) or not 0 <= tile < self.params.nt:
            raise ProgramError(f"tile {show(tile)} outside [0, {self.params.nt - 1}]")
        return int(tile)

    def schedule_image(self, tile: int) -> list[int]:
        """The tile's schedule memory: its words padded with zeros to ``sd`` words.

        Raises:
            ProgramError: the schedule has more than ``sd`` words (rule SIZE).
        """
        t = self._tile(tile)
        s = self.schedules[t]
        if len(s) > self.params.sd:
            raise ProgramError(f"tile {t}: {len(s)} schedule words, more than sd = {self.params.sd} (rule SIZE)")
        return s + [0] * (self.params.sd - len(s))

    def data_image(self, tile: int) -> np.ndarray:
        """The tile's data memory, ``2**aw`` words (int64, each in ``[0, 2**dw)``)."""
        t = self._tile(tile)
        img = np.zeros(self.params.words, dtype=np.int64)
        for a, v in self.data[t].items():
            img[a] = v
        return img

    def entries(self, tile: int) -> list[Entry]:
        """The tile's schedule words, decoded."""
        t = self._tile(tile)
        return [decode(w, self.params) for w in self.schedules[t]]

    def expanded(self, tile: int) -> list[ExpandedEntry]:
        """The expanded stream of the tile's whole schedule image."""
        return expand(self.schedule_image(tile), self.params)

    def copy(self) -> "Program":
        """A deep copy (meta is shared)."""
        return Program(self.params, [list(s) for s in self.schedules], [dict(d) for d in self.data], self.meta)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Program):
            return NotImplemented
        return (self.params == other.params and self.schedules == other.schedules
                and self.data == other.data)

    def __repr__(self) -> str:
        return (f"Program(nt={self.params.nt}, words={[len(s) for s in self.schedules]}, "
                f"data_words={[len(d) for d in self.data]})")


# ---- executor -------------------------------------------------------------------------------
class ErrorCause(NamedTuple):
    """Why an error bit was raised (one record per raise, also for bits already set).

    Attributes:
        cycle: absolute cycle.
        tile: the tile (-1 = the bus).
        bit: the error bit value.
        xidx: index of the responsible expanded entry on ``tile`` (None if none).
        word: index of its schedule word (None if none).
        detail: human-readable description.
        others: for COLLISION: the drivers ``((tile, xidx, word), ...)``; for WCONF:
            the writes ``((source, xidx, word), ...)``; else ``()``.
    """

    cycle: int
    tile: int
    bit: int
    xidx: int | None
    word: int | None
    detail: str
    others: tuple = ()


@dataclass
class Run:
    """Result of :func:`execute`.

    Attributes:
        params: the fabric parameters.
        cycles: cycles simulated (events lie in ``[0, cycles)``).
        trace: sorted events (docs/sched.md section 8):
            ``(c, "issue", tile, word)``, ``(c, "word", tile, port, value)``,
            ``(c, "bus", -1, value)``, ``(c, "write", tile, source, addr, value)``,
            ``(c, "err", tile, new_bits)`` (tile -1 = the bus).
        mems: final data memories (int64 arrays of ``2**aw`` words).
        err: sticky error vector per tile.
        err_cnt: counter value at the first error per tile (None without error).
        halted: per tile, the tile has stopped issuing (HALT issued, or an error).
        halt_cnt: counter value of the HALT issue per tile (None if none).
        bus_err: the bus's error vector (only ``ERR_COLLISION``).
        bus_err_cnt: counter value of the first collision (None without one).
        issue_counts: entries issued per tile.
        errors: every error raise with its cause (:class:`ErrorCause`).
        residual: words left in each input buffer at the end, ``[tile][port]`` (port 2,
            the bus, has no buffer: always 0).
        max_occupancy: the largest input-buffer occupancy seen, ``[tile][port]``.
        len_issues: with ``checks=True``: LEN findings ``(cycle, tile, xidx, word,
            message)`` (a consumer that takes words of several SENDs or a different count,
            ring words left in a buffer, bus words no TAP/FWD takes); else empty.
        streams: the expanded stream of every tile.
        recv_slack: per RECV that popped a word, ``(tile, port, issue cycle, slack)``:
            the cycles its first word had been poppable before the RECV took it (0 = the
            tightest legal schedule, as in the patent's Fig. 2A).
        fifo_max: the largest occupancy of the external FIFO (``comm``).
        fifo_residual: words left in the external FIFO at the end.
        checks_noisy: with ``checks=True``: per CHECK issued while something was busy or
            in flight (rule CHECK_QUIET), ``(cycle, xidx, word, reason)``.
        ext_dropped: the cycles of external words dropped by a full FIFO.
    """

    params: FabricParams
    cycles: int
    trace: list[tuple]
    mems: list[np.ndarray]
    err: list[int]
    err_cnt: list[int | None]
    halted: list[bool]
    halt_cnt: list[int | None]
    bus_err: int
    bus_err_cnt: int | None
    issue_counts: list[int]
    errors: list[ErrorCause]
    residual: list[list[int]]
    max_occupancy: list[list[int]]
    len_issues: list[tuple]
    streams: list[list[ExpandedEntry]]
    recv_slack: list[tuple[int, int, int, int]] = dataclasses.field(default_factory=list)
    fifo_max: int = 0
    fifo_residual: int = 0
    checks_noisy: list[tuple] = dataclasses.field(default_factory=list)
    ext_dropped: list[int] = dataclasses.field(default_factory=list)

    def events(self, kind: str | None = None, tile: int | None = None) -> list[tuple]:
        """Trace events filtered by kind and/or tile."""
        return [e for e in self.trace if (kind is None or e[1] == kind) and (tile is None or e[2] == tile)]

    def first_error(self) -> tuple | None:
        """The earliest ``err`` event (lowest cycle, then tile), or None."""
        errs = self.events("err")
        return errs[0] if errs else None

    @property
    def ok(self) -> bool:
        """No error on any tile and no bus collision."""
        return not any(self.err) and not self.bus_err


class _Op:
    """An operation in flight on one tile."""

    __slots__ = ("op", "n", "last", "port", "src", "a", "b", "d", "N", "xidx", "acc", "consumed")

    def __init__(self, x: tuple, n: int) -> None:
        (_, self.op, self.port, self.src, self.a, self.b, self.d, self.N) = x[:8]
        self.n = n
        self.last = n + self.N - 1
        self.xidx = x[11]
        self.acc = 0
        self.consumed: list = []


def execute(program: Program, cycles: int | FabricParams | None = None, params: Any = None, *,
            checks: bool = False, ext: Sequence[tuple[int, int]] | None = None) -> Run:
    """Run a program cycle by cycle (docs/sched.md section 8).

    Simulates from the first cycle of ``run = 1`` (count 0). Absolute cycle ``c`` has
    ``count = c mod 2**cw``.

    Args:
        program: the program.
        cycles: cycles to simulate; None runs until nothing can happen any more (every
            tile has halted or run out of entries, and nothing is in flight). The
            contract's order ``execute(program, params, cycles)`` is accepted too.
        params: optional; must equal ``program.params``.
        checks: also track word origins for the LEN rule (:attr:`Run.len_issues`) and
            the CHECK_QUIET rule (:attr:`Run.checks_noisy`).
        ext: the external words of the communication interface (``comm``), as
            ``(cycle, value)``: ``ext_valid`` is high in absolute cycle ``cycle`` with
            ``ext_data = value``; at most one word per cycle. None or empty: no word.

    Returns:
        The :class:`Run`.

    Raises:
        ProgramError: a schedule longer than ``sd``.
        ParamError: ``params`` differs from the program's, ``cycles`` is negative, or
            ``ext`` is malformed (not ``comm``, a negative cycle, two words in one cycle,
            a value outside ``[0, 2**dw)``).
    """
    if isinstance(cycles, FabricParams):
        cycles, params = params, cycles
    if not isinstance(program, Program):
        raise ParamError(f"execute: expected a Program, got {type(program).__name__}")
    p = program.params
    if params is not None and params != p:
        raise ParamError("execute: params differ from program.params")
    if cycles is not None and (not _is_int(cycles) or cycles < 0):
        raise ParamError(f"execute: cycles={cycles!r} must be a non-negative int or None")
    return _Sim(program, checks, _ext_map(ext, p)).run(None if cycles is None else int(cycles))


def _ext_map(ext: Any, p: FabricParams) -> dict[int, int]:
    """Validate ``execute``'s ``ext`` into ``{cycle: value}``."""
    if ext is None:
        return {}
    out: dict[int, int] = {}
    for item in ext:
        if not isinstance(item, (tuple, list)) or len(item) != 2 or not all(_is_int(v) for v in item):
            raise ParamError(f"execute: ext item {item!r} must be (cycle, value) ints")
        c, v = int(item[0]), int(item[1])
        if not p.comm:
            raise ParamError("execute: ext words need FabricParams.comm = True (the communication interface)")
        if c < 0:
            raise ParamError(f"execute: ext cycle {c} is negative")
        if c in out:
            raise ParamError(f"execute: two ext words in cycle {c} (ext_valid carries one word per cycle)")
        if not 0 <= v < 1 << p.dw:
            raise ParamError(f"execute: ext value {v} at cycle {c} outside [0, 2**dw)")
        out[c] = v
    return out


class _Sim:
    """The cycle loop of :func:`execute` (state kept in lists indexed by tile)."""

    def __init__(self, program: Program, checks: bool, ext: dict[int, int] | None = None,
                 ideal_fifo: bool = False) -> None:
        p = program.params
        self.p = p
        self.checks = checks
        self.ext = ext or {}
        # the linter's run: the FIFO never lacks a word (pops of an empty one give 0, no
        # error; CHECK never acts), so the schedule is checked in its own time base
        self.ideal_fifo = ideal_fifo
        nt = p.nt
        self.streams = [program.expanded(t) for t in range(nt)]
        # per expanded entry: (T, op, port, src, a, b, d, N, word, units, opcode_problem, xidx, poison, wordidx)
        self.xs = []
        for t in range(nt):
            lst = []
            for k, x in enumerate(self.streams[t]):
                e = x.entry
                prob = None if x.poison else opcode_problem(e, p, t)
                lst.append((e.t, e.op, e.port, e.b & 3, e.a, e.b, e.d, e.n, encode(e, p),
                            entry_units(e, p), prob, k, x.poison, x.src, x.reason, entry_busy_len(e)))
            self.xs.append(lst)
        self.mems = [[int(v) for v in program.data_image(t)] for t in range(nt)]

    # -- helpers --
    def _word_of(self, t: int, xidx: int | None) -> int | None:
        return None if xidx is None else self.streams[t][xidx].src

    def run(self, cycles: int | None) -> Run:
        p = self.p
        nt = p.nt
        M = 1 << p.cw
        cmask = M - 1
        half = p.half
        amask = (1 << p.aw) - 1
        dmask = (1 << p.dw) - 1
        hop = p.hop_lat
        l_alu1 = p.l_alu - 1
        buf_d = p.buf_d
        has_bus = p.bus
        checks = self.checks
        xs = self.xs
        mems = self.mems
        limit = cycles

        trace: list[tuple] = []
        errors: list[ErrorCause] = []
        ptr = [0] * nt
        ready = [FabricParams.FETCH_LEAD + (1 if xs[t] and self.streams[t][0].first_in_block else 0)
                 for t in range(nt)]
        stopped = [False] * nt
        halt_cnt: list[int | None] = [None] * nt
        err = [0] * nt
        err_cnt: list[int | None] = [None] * nt
        bus_err = 0
        bus_err_cnt = None
        issue_counts = [0] * nt
        busy = [[-1] * N_UNITS for _ in range(nt)]
        kk = p.k
        accmask = (1 << p.accw) - 1
        dw = p.dw
        l_mm1 = FabricParams.L_MM - 1
        back = [[[0] * kk for _ in range(kk)] for _ in range(nt)]
        front = [[[0] * kk for _ in range(kk)] for _ in range(nt)]
        mac_add: list[dict[int, list]] = [{} for _ in range(nt)]   # cycle -> add-stage jobs
        psum_out: list[dict[int, tuple]] = [{} for _ in range(nt)]  # cycle -> lanes (valid)
        active: list[list[_Op]] = [[] for _ in range(nt)]
        alu_w: list[dict[int, list]] = [{} for _ in range(nt)]
        bufs = [[deque(), deque(), deque()] for _ in range(nt)]
        maxocc = [[0, 0, 0] for _ in range(nt)]
        recv_slack: list[tuple[int, int, int, int]] = []
        outs: list[list[dict[int, tuple]]] = [[{}, {}, {}] for _ in range(nt)]
        busreg: dict[int, tuple] = {}
        consumers: list[tuple] = []   # (tile, _Op) finished consumer ops (checks)
        lost_bus: list[tuple] = []    # (cycle, tag) bus words no TAP/FWD took (checks)
        send_n: dict[tuple[int, int], int] = {}
        # communication interface (section 11): FIFO, time base, suspension, pad credits
        ext = self.ext
        ext_cycles = sorted(ext)
        ext_i = 0
        ideal = self.ideal_fifo
        fifo: deque = deque()
        fifo_max = 0
        fifo_d = p.fifo_d
        tbase = 0           # t_eff = count - base (mod 2**cw), the same on every tile
        sus_left = 0        # base increments left (one at the end of each cycle)
        pad_left = 0        # pops of an empty FIFO that return the pad word
        last_pop: int | None = None
        src_fifo = SRC_MAC + kk
        checks_noisy: list[tuple] = []
        check_now: tuple | None = None
        ext_dropped: list[int] = []
        # who drives in[0], in[1] and psum_in of each tile (ring or mesh: FabricParams.link_src)
        links = [(p.link_src(t, 0), p.link_src(t, 1), p.psum_src(t)) for t in range(nt)]

        def inflight() -> bool:
            if busreg or sus_left:
                return True
            for t in range(nt):
                if active[t] or alu_w[t] or mac_add[t] or psum_out[t]:
                    return True
                o = outs[t]
                if o[0] or o[1] or o[2]:
                    return True
            return False

        k = 0
        while True:
            if limit is not None and k >= limit:
                break
            # ---- idle skip: nothing in flight -> jump to the next sequencer event
            if not inflight():
                nxt = None
                for t in range(nt):
                    if stopped[t] or ptr[t] >= len(xs[t]):
                        continue
                    r = max(k, ready[t])
                    diff = (xs[t][ptr[t]][0] - ((r - tbase) & cmask)) & cmask
                    c = r if diff >= half else r + diff
                    nxt = c if nxt is None or c < nxt else nxt
                while ext_i < len(ext_cycles) and ext_cycles[ext_i] < k:
                    ext_i += 1
                if ext_i < len(ext_cycles) and (nxt is None or ext_cycles[ext_i] < nxt):
                    nxt = ext_cycles[ext_i]   # an external word arrives: the FIFO must see it
                if nxt is None:
                    if limit is None:
                        break
                    k = limit
                    break
                if limit is not None and nxt >= limit:
                    k = limit
                    break
                k = nxt
            cnt = k & cmask
            teff = (k - tbase) & cmask
            pend = [0] * nt
            bus_in = busreg.pop(k, None) if has_bus else None
            bus_taken = False
            for t in range(nt):
                # ---- inputs of this cycle
                (s0, q0), (s1, q1), sp = links[t]
                in0 = outs[s0][q0].pop(k - hop, None)
                in1 = outs[s1][q1].pop(k - hop, None)
                psum_in = psum_out[sp].pop(k - hop, None) if kk else None
                ins = (in0, in1, bus_in)
                consumed = [False, False, False]
                mem = mems[t]
                # ---- sequencer
                if not stopped[t] and ptr[t] < len(xs[t]) and k >= ready[t]:
                    x = xs[t][ptr[t]]
                    diff = (x[0] - teff) & cmask
                    if diff == 0:
                        xidx = x[11]
                        if x[12]:
                            pend[t] |= ERR_DECOMP
                            errors.append(ErrorCause(k, t, ERR_DECOMP, xidx, x[13], f"poison entry: {x[14]}"))
                        else:
                            bits = 0
                            if x[10] is not None:
                                bits |= ERR_OPCODE
                                errors.append(ErrorCause(k, t, ERR_OPCODE, xidx, x[13], x[10]))
                            bu = [u for u in x[9] if busy[t][u] >= k]
                            if bu:
                                bits |= ERR_BUSY
                                names = ", ".join(_UNIT_NAMES[u] for u in bu)
                                errors.append(ErrorCause(k, t, ERR_BUSY, xidx, x[13], f"unit(s) busy: {names}"))
                            if bits:
                                pend[t] |= bits
                            else:
                                trace.append((k, "issue", t, x[8]))
                                issue_counts[t] += 1
                                ptr[t] += 1
                                ready[t] = k + 1
                                op = x[1]
                                if op == _HALT:
                                    stopped[t] = True
                                    halt_cnt[t] = cnt
                                elif op == _SWPW:
                                    for u in x[9]:
                                        busy[t][u] = k
                                    front[t] = [list(row) for row in back[t]]
                                elif op == _CHECK:
                                    if checks:
                                        check_now = (x[11], x[13])
                                    if not ideal and len(fifo) < x[7]:
                                        if x[5] == 0:          # suspend: t_eff holds for D = A cycles
                                            if x[4]:
                                                sus_left = x[4]
                                                trace.append((k, "suspend", -1, x[4]))
                                        else:                  # pad the next N empty pops
                                            pad_left = x[7]
                                elif op != _NOP:
                                    for u in x[9]:
                                        busy[t][u] = k + x[15] - 1
                                    active[t].append(_Op(x, k))
                                    if op == _SEND and checks:
                                        send_n[(t, xidx)] = x[7]
                    elif diff >= half:
                        pend[t] |= ERR_MISSED
                        errors.append(ErrorCause(k, t, ERR_MISSED, x[11], x[13],
                                                 f"head entry T={x[0]} is in the past at count {cnt}"))
                # ---- operations in flight
                writes = []
                if active[t]:
                    keep = []
                    for o in active[t]:
                        i = k - o.n
                        op = o.op
                        if op == _SEND:
                            v = mem[(o.a + i) & amask]
                            outs[t][o.port][k + 1] = (v, (t, o.xidx, i))
                            if limit is None or k + 1 < limit:
                                trace.append((k + 1, "word", t, o.port, v))
                        elif op == _RECV and o.port == P_FIFO:   # the external FIFO (section 11)
                            if fifo:
                                v = fifo.popleft()
                                last_pop = v
                            elif ideal:
                                v = 0
                            elif pad_left:
                                pad_left -= 1
                                v = last_pop if last_pop is not None else 0
                                trace.append((k, "pad", t, v))
                            else:
                                v = None
                                pend[t] |= ERR_UNDERFLOW
                                errors.append(ErrorCause(k, t, ERR_UNDERFLOW, o.xidx, self._word_of(t, o.xidx),
                                                         f"RECV element {i} pops the empty external FIFO"))
                            if v is not None:
                                writes.append((src_fifo, (o.d + i) & amask, v, o.xidx))
                        elif op == _RECV:
                            b = bufs[t][o.port]
                            if b:
                                v, tag, pushed = b.popleft()
                                if i == 0:  # slack: cycles the first word waited after it became poppable
                                    recv_slack.append((t, o.port, k, k - pushed - FabricParams.P_RECV))
                                writes.append((o.port, (o.d + i) & amask, v, o.xidx))
                                if checks:
                                    o.consumed.append(tag)
                            else:
                                pend[t] |= ERR_UNDERFLOW
                                errors.append(ErrorCause(
                                    k, t, ERR_UNDERFLOW, o.xidx, self._word_of(t, o.xidx),
                                    f"RECV element {i} pops the empty {PORT_NAMES[o.port]} buffer"))
                        elif op == _TAP:
                            w = ins[o.port]
                            if w is not None:
                                consumed[o.port] = True
                                writes.append((o.port, (o.d + i) & amask, w[0], o.xidx))
                                if checks:
                                    o.consumed.append(w[1])
                            else:
                                pend[t] |= ERR_TAP_IDLE
                                errors.append(ErrorCause(
                                    k, t, ERR_TAP_IDLE, o.xidx, self._word_of(t, o.xidx),
                                    f"TAP element {i} samples an idle {PORT_NAMES[o.port]} input"))
                        elif op == _FWD:
                            w = ins[o.src]
                            if w is not None:
                                consumed[o.src] = True
                                outs[t][o.port][k + 1] = w
                                if limit is None or k + 1 < limit:
                                    trace.append((k + 1, "word", t, o.port, w[0]))
                                if checks:
                                    o.consumed.append(w[1])
                            elif checks:
                                o.consumed.append(None)
                        elif op in MV_OPS:
                            base = o.b + i * kk
                            xv = [to_signed(mem[(base + r) & amask], dw) for r in range(kk)]
                            fr = front[t]
                            prod = [sum(xv[r] * fr[r][c] for r in range(kk)) for c in range(kk)]
                            mac_add[t].setdefault(k + l_mm1, []).append((o, i, prod))
                        elif op == _LDW:
                            base = o.a + i * kk
                            back[t][i] = [to_signed(mem[(base + c) & amask], dw) for c in range(kk)]
                        elif op == _VPU:
                            va = to_signed(mem[(o.a + i) & amask], dw)
                            vb = to_signed(mem[(o.b + i) & amask], dw)
                            r = max(va + vb, 0) >> p.vpu_shift
                            alu_w[t].setdefault(k + l_alu1, []).append(((o.d + i) & amask, r & dmask, o.xidx))
                        elif op == _DOT:
                            o.acc += mem[(o.a + i) & amask] * mem[(o.b + i) & amask]
                            if i == o.N - 1:
                                alu_w[t].setdefault(k + l_alu1, []).append((o.d & amask, o.acc & dmask, o.xidx))
                        else:
                            va = mem[(o.a + i) & amask]
                            vb = mem[(o.b + i) & amask]
                            r = (va + vb) if op == _VADD else (va * vb)
                            alu_w[t].setdefault(k + l_alu1, []).append(((o.d + i) & amask, r & dmask, o.xidx))
                        if k < o.last:
                            keep.append(o)
                        elif checks and op in (_RECV, _TAP, _FWD):
                            consumers.append((t, o))
                    active[t] = keep
                aw_list = alu_w[t].pop(k, None)
                if aw_list:
                    for a_, v_, xi in aw_list:
                        writes.append((SRC_ALU, a_, v_, xi))
                # ---- MAC add stage: + psum_in (PORT[0]), then memory or psum_out (PORT[1])
                jobs = mac_add[t].pop(k, None) if kk else None
                if jobs:
                    for o, i, prod in jobs:
                        if o.port & 1:
                            if psum_in is None:
                                pend[t] |= ERR_TAP_IDLE
                                errors.append(ErrorCause(
                                    k, t, ERR_TAP_IDLE, o.xidx, self._word_of(t, o.xidx),
                                    f"MATVEC vector {i} samples an idle psum_in"))
                            else:
                                prod = [a_ + b_ for a_, b_ in zip(prod, psum_in)]
                        y = tuple(v_ & accmask for v_ in prod)
                        if o.port & 2:
                            psum_out[t][k + 1] = y
                            if limit is None or k + 1 < limit:
                                trace.append((k + 1, "psum", t, y))
                        else:
                            base = o.d + i * kk
                            if o.op == _MATVR:  # the VPU segment: + bias mem[A+c], ReLU, shift
                                y = tuple(max(to_signed(y[c], p.accw) + to_signed(mem[(o.a + c) & amask], dw), 0)
                                          >> p.vpu_shift for c in range(kk))
                            for c in range(kk):
                                writes.append((SRC_MAC + c, (base + c) & amask, y[c] & dmask, o.xidx))
                # ---- writes at the end of the cycle (lowest priority first)
                if writes:
                    writes.sort(key=lambda w: w[0])
                    seen: dict[int, list] = {}
                    for src, addr, v, xi in writes:
                        trace.append((k, "write", t, src, addr, v))
                        mem[addr] = v
                        seen.setdefault(addr, []).append((src, xi, self._word_of(t, xi)))
                    for addr, ws in seen.items():
                        if len(ws) > 1:
                            pend[t] |= ERR_WCONF
                            hi = ws[-1]
                            errors.append(ErrorCause(k, t, ERR_WCONF, hi[1], hi[2],
                                                     f"{len(ws)} writes to address {addr} (sources "
                                                     + ", ".join(str(s[0]) for s in ws) + ")", tuple(ws)))
                # ---- input buffers (ring ports only): push the words no TAP/FWD consumed;
                # a bus word nobody takes is simply not captured
                if checks and bus_in is not None and consumed[2]:
                    bus_taken = True
                for q in (0, 1):
                    w = ins[q]
                    if w is not None and not consumed[q]:
                        b = bufs[t][q]
                        if len(b) >= buf_d:
                            pend[t] |= ERR_OVERFLOW
                            src = w[1]
                            errors.append(ErrorCause(
                                k, t, ERR_OVERFLOW, None, None,
                                f"word from tile {src[0]} entry {self._word_of(src[0], src[1])} "
                                f"element {src[2]} reaches the full {PORT_NAMES[q]} buffer", (src,)))
                        else:
                            b.append((w[0], w[1], k))
                            if len(b) > maxocc[t][q]:
                                maxocc[t][q] = len(b)
            if checks and bus_in is not None and not bus_taken:
                lost_bus.append((k, bus_in[1]))
            # ---- the external FIFO takes this cycle's word at the end of the cycle
            if k in ext:
                if len(fifo) >= fifo_d:
                    ext_dropped.append(k)
                    pend[COMM_TILE] |= ERR_FIFO_OVF
                    errors.append(ErrorCause(k, COMM_TILE, ERR_FIFO_OVF, None, None,
                                             f"external word {ext[k]} reaches the full FIFO ({fifo_d} words)"))
                else:
                    fifo.append(ext[k])
                    fifo_max = max(fifo_max, len(fifo))
            # ---- CHECK_QUIET: nothing busy or in flight at the end of a CHECK's cycle
            if check_now is not None:
                why = [f"tile {t} {_UNIT_NAMES[u]} busy" for t in range(nt) for u in range(N_UNITS) if busy[t][u] >= k]
                if any(outs[t][q] for t in range(nt) for q in range(3)) or busreg:
                    why.append("a word in flight on a link or the bus")
                if any(alu_w[t] or mac_add[t] or psum_out[t] for t in range(nt)):
                    why.append("a write or partial sum in flight")
                if why:
                    checks_noisy.append((k, check_now[0], check_now[1], "; ".join(why)))
                check_now = None
            if sus_left:
                tbase += 1
                sus_left -= 1
            # ---- the bus register
            if has_bus:
                drivers = [t for t in range(nt) if k in outs[t][2]]
                if drivers:
                    words = [outs[t][2].pop(k) for t in drivers]
                    busreg[k + 1] = words[0]
                    if limit is None or k + 1 < limit:
                        trace.append((k + 1, "bus", -1, words[0][0]))
                    if len(drivers) > 1:
                        errors.append(ErrorCause(
                            k, -1, ERR_COLLISION, None, None,
                            "bus drivers: " + ", ".join(f"tile {t} entry {self._word_of(t, w[1][1])}"
                                                        for t, w in zip(drivers, words)),
                            tuple((t, w[1][1], self._word_of(t, w[1][1])) for t, w in zip(drivers, words))))
                        if not bus_err & ERR_COLLISION:
                            trace.append((k, "err", -1, ERR_COLLISION))
                        bus_err |= ERR_COLLISION
                        if bus_err_cnt is None:
                            bus_err_cnt = cnt
            # ---- sticky error registers
            for t in range(nt):
                bits = pend[t]
                if bits:
                    new = bits & ~err[t]
                    if new:
                        trace.append((k, "err", t, new))
                    err[t] |= bits
                    if err_cnt[t] is None:
                        err_cnt[t] = cnt
                    stopped[t] = True
            k += 1
        ncyc = k
        if checks:
            for t in range(nt):
                for o in active[t]:
                    if o.op in (_RECV, _TAP, _FWD):
                        consumers.append((t, o))
        len_issues = self._len_check(consumers, send_n, bufs, lost_bus, ncyc) if checks else []
        trace.sort()
        return Run(
            params=p, cycles=ncyc, trace=trace,
            mems=[np.array(m, dtype=np.int64) for m in mems],
            err=err, err_cnt=err_cnt, halted=list(stopped), halt_cnt=halt_cnt,
            bus_err=bus_err, bus_err_cnt=bus_err_cnt, issue_counts=issue_counts, errors=errors,
            residual=[[len(b) for b in bufs[t]] for t in range(nt)], max_occupancy=maxocc,
            len_issues=len_issues, streams=self.streams, recv_slack=recv_slack,
            fifo_max=fifo_max, fifo_residual=len(fifo), checks_noisy=checks_noisy, ext_dropped=ext_dropped)

    def _len_check(self, consumers: list, send_n: dict, bufs: list, lost_bus: list, ncyc: int) -> list[tuple]:
        """LEN findings: each consumer takes exactly the words of one SEND, N for N; no
        ring word is left in a buffer; every bus word is taken by some TAP/FWD."""
        out = []
        seen_lost = set()
        for c, (st, sx, i) in lost_bus:
            if (st, sx) in seen_lost:
                continue
            seen_lost.add((st, sx))
            w = self._word_of(st, sx)
            out.append((c, st, sx, w, f"tile {st} entry {w}: bus word {i} (cycle {c}) is taken by no TAP/FWD"))
        for t, o in consumers:
            name = OP_NAMES[o.op]
            w = self._word_of(t, o.xidx)
            tags = [g for g in o.consumed if g is not None]
            origins = sorted({(g[0], g[1]) for g in tags})
            if not tags:
                if o.op == _FWD:
                    out.append((o.n, t, o.xidx, w, f"tile {t} entry {w}: FWD of {o.N} words forwards no word"))
                continue
            if len(origins) > 1:
                desc = ", ".join(f"tile {a} entry {self._word_of(a, b)}" for a, b in origins)
                out.append((o.n, t, o.xidx, w,
                            f"tile {t} entry {w}: {name} consumes words of several SENDs ({desc})"))
                continue
            st, sx = origins[0]
            sn = send_n.get((st, sx))
            if sn is not None and sn != o.N:
                out.append((o.n, t, o.xidx, w, f"tile {t} entry {w}: {name} of {o.N} words consumes a SEND of "
                                               f"{sn} words (tile {st} entry {self._word_of(st, sx)})"))
            elif o.op == _FWD and len(tags) != o.N:
                out.append((o.n, t, o.xidx, w,
                            f"tile {t} entry {w}: FWD of {o.N} cycles forwards {len(tags)} words"))
        for t in range(self.p.nt):
            for q in range(3):
                b = bufs[t][q]
                if b:
                    origins = sorted({(g[1][0], g[1][1]) for g in b})
                    desc = ", ".join(f"tile {a} entry {self._word_of(a, x)}" for a, x in origins)
                    out.append((ncyc, t, None, None, f"tile {t}: {len(b)} word(s) left in the {PORT_NAMES[q]} "
                                                     f"input buffer, never consumed (from {desc})"))
        return out

