"""Schedule assembly text format (docs/sched.md section 10).

Import through :mod:`lockstep.models.sched`.
"""

from __future__ import annotations

import re

from ..record import ParamError
from .params import FabricParams
from .core import (
    MAC_OPS, OP_NAMES, OPS, PORT_NAMES, RESERVED_OPS, EncodeError, Entry, Program, decode, encode,
)

__all__ = ["AsmError", "assemble", "disassemble", "format_entry"]

_FWD = OPS["FWD"]
_PERIODIC = OPS["PERIODIC"]
_MV = frozenset({MAC_OPS["MATVEC"], MAC_OPS["MATVR"]})
_LDW = MAC_OPS["LDW"]
_MAC_SET = frozenset(MAC_OPS.values())
_COMM_SET = frozenset(FabricParams.COMM_OPCODES.values())
_RECV = OPS["RECV"]
_FIELDS = ("port", "unit", "a", "b", "d", "len", "src", "psum_in", "psum_out")
#: Every mnemonic the assembler accepts (the MAC ones whatever ``k``; with ``k = 0`` they
#: assemble, and raise OPCODE at issue).
_MNEMONICS: dict[str, int] = {**OPS, **MAC_OPS, **FabricParams.COMM_OPCODES}
#: Fields always printed in the mnemonic form of each opcode (others only when nonzero).
_SHOWN: dict[int, tuple[str, ...]] = {
    OPS["NOP"]: (),
    OPS["SEND"]: ("port", "a", "len"),
    OPS["RECV"]: ("port", "d", "len"),
    OPS["TAP"]: ("port", "d", "len"),
    OPS["VADD"]: ("a", "b", "d", "len"),
    OPS["VMUL"]: ("a", "b", "d", "len"),
    OPS["DOT"]: ("a", "b", "d", "len"),
    OPS["FWD"]: ("port", "src", "len"),
    OPS["HALT"]: (),
    MAC_OPS["LDW"]: ("a", "len"),
    MAC_OPS["SWPW"]: (),
    MAC_OPS["MATVEC"]: ("b", "d", "len"),
    MAC_OPS["VPU"]: ("a", "b", "d", "len"),
    MAC_OPS["MATVR"]: ("a", "b", "d", "len"),
    FabricParams.COMM_OPCODES["CHECK"]: ("port", "a", "b", "len"),
}


class AsmError(ParamError):
    """A schedule-assembly error; the message starts with ``line N:``.

    Attributes:
        line: the 1-based line number (0 when not tied to a line).
    """

    def __init__(self, line: int, msg: str) -> None:
        super().__init__(f"line {line}: {msg}" if line else msg)
        self.line = line


#: A number once ``_`` separators are dropped and case folded: ASCII decimal, 0x hex or 0b
#: binary (docs/sched.md section 10); a sign only where ``signed`` (``.data`` values).
_NUMBER = re.compile(r"0x[0-9a-f]+|0b[01]+|[0-9]+", re.ASCII)
#: Wider unsigned numbers fit no field (T, the widest, has ``cw <= 32`` bits): refused here,
#: before a range message would print them (Python prints no int of over 4300 digits).
_NUM_BITS = 64
#: Line breaks: ``\n``, ``\r\n``, ``\r`` (universal newlines, as a text file is read and as
#: an editor numbers lines); form feed, U+2028 and the like are whitespace inside a line.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _num(tok: str, line: int, what: str, signed: bool = False) -> int:
    s = tok.strip().lower().replace("_", "")
    neg = False
    if signed and s[:1] in ("-", "+"):
        neg, s = s[0] == "-", s[1:]
    if not _NUMBER.fullmatch(s):
        raise AsmError(line, f"{what}: {tok!r} is not a number (decimal, 0x hex or 0b binary)")
    try:
        v = int(s[2:], 16) if s.startswith("0x") else int(s[2:], 2) if s.startswith("0b") else int(s, 10)
    except ValueError:   # a decimal of more digits than int() converts
        raise AsmError(line, f"{what}: {tok!r} has too many digits") from None
    if not signed and v.bit_length() > _NUM_BITS:
        raise AsmError(line, f"{what}: {tok!r} is out of range (wider than {_NUM_BITS} bits)")
    return -v if neg else v


def _port(tok: str, line: int, what: str) -> int:
    t = tok.lower()
    if t in PORT_NAMES:
        return PORT_NAMES.index(t)
    v = _num(tok, line, what)
    if not 0 <= v <= 3:
        raise AsmError(line, f"{what}={tok}: a port is prev, next, bus, fifo or a number 0..3")
    return v


def _parse_op(toks: list[str], t: int, line: int, params: FabricParams) -> Entry:
    """``OP field=value ...`` -> Entry with the given T."""
    if not toks:
        raise AsmError(line, "missing opcode after the time")
    name = toks[0].upper()
    explicit = False
    if name in _MNEMONICS:
        op = _MNEMONICS[name]
        if op == _PERIODIC:
            raise AsmError(line, "use '.periodic @T period=P reps=R' ... '.end' for a periodic block, or the "
                                 "explicit form OP15 for a raw header word")
    elif name.startswith("OP") and len(name) > 2:
        op = _num(name[2:], line, "opcode")
        if not 0 <= op <= 15:
            raise AsmError(line, f"opcode {name}: must be OP0..OP15")
        explicit = True
    else:
        raise AsmError(line, f"unknown opcode {toks[0]!r} (mnemonics: {', '.join(_MNEMONICS)}; or OP<n>)")
    vals: dict[str, int] = {}
    for tok in toks[1:]:
        if "=" not in tok:
            raise AsmError(line, f"expected field=value, got {tok!r}")
        k, _, v = tok.partition("=")
        k = k.lower()
        if k not in _FIELDS:
            raise AsmError(line, f"unknown field {k!r} (fields: port, unit, a, b, d, len, src; "
                                 "psum_in, psum_out for MATVEC and MATVR)")
        if k in vals:
            raise AsmError(line, f"field {k} given twice")
        if not v:
            raise AsmError(line, f"field {k} has no value")
        if k == "port":
            vals[k] = _port(v, line, k)
        elif k == "src":
            if explicit or op != _FWD:
                raise AsmError(line, "src= is only for the FWD mnemonic (the explicit form uses b=)")
            vals[k] = _port(v, line, k)
        elif k in ("psum_in", "psum_out"):
            if explicit or op not in _MV:
                raise AsmError(line, f"{k}= is only for the MATVEC and MATVR mnemonics (the explicit form uses port=)")
            f = _num(v, line, k)
            if f not in (0, 1):
                raise AsmError(line, f"{k}={v}: must be 0 or 1")
            vals[k] = f
        else:
            vals[k] = _num(v, line, k)
    if "psum_in" in vals or "psum_out" in vals:
        if "port" in vals:
            raise AsmError(line, f"{OP_NAMES[op]}: give psum_in=/psum_out= or port=, not both")
        vals["port"] = vals.pop("psum_in", 0) | (vals.pop("psum_out", 0) << 1)
    if "src" in vals:
        if "b" in vals:
            raise AsmError(line, "FWD: give src= or b=, not both")
        vals["b"] = vals.pop("src")
    n = vals.pop("len", params.k if (op == _LDW and params.k and not explicit) else 1)
    if not 1 <= n <= 256:
        raise AsmError(line, f"len={n}: the element count N must be in [1, 256]")
    e = Entry(t=t, op=op, len=n - 1, **vals)
    try:
        encode(e, params)
    except EncodeError as ex:
        raise AsmError(line, str(ex)) from None
    return e


def assemble(text: str, params: FabricParams) -> Program:
    """Assemble the text format of docs/sched.md section 10 into a :class:`Program`.

    Lines: ``.tile N``; ``.data ADDR: v v ...`` (values wrapped to ``dw`` bits);
    ``@T OP field=value ...`` with a mnemonic (fields port, a, b, d, len, unit, and src
    for FWD; omitted fields are 0, ``len`` is the count N and defaults to 1) or the
    explicit ``OP<n>``; ``.periodic @T period=P reps=R`` followed by body lines
    ``+d OP ...`` and ``.end``. Comments run from ``#`` to the end of the line. Lines end
    with ``\\n``, ``\\r\\n`` or ``\\r``, and are numbered so in the errors.

    Args:
        text: the program text.
        params: fabric parameters.

    Returns:
        The program. Tiles not mentioned get an empty schedule.

    Raises:
        AsmError: any error, with its line number.
    """
    if not isinstance(params, FabricParams):
        raise ParamError(f"params: expected a FabricParams, got {type(params).__name__}")
    nt = params.nt
    scheds: list[list[int] | None] = [None] * nt
    where: dict[int, int] = {}
    data: list[dict[int, int]] = [{} for _ in range(nt)]
    cur: int | None = None
    block = None  # (line, T, P, reps, [entries])
    tmax = (1 << params.cw) - 1
    dmask = (1 << params.dw) - 1
    for ln, raw in enumerate(_LINE_BREAK.split(text), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        toks = line.split()
        head = toks[0].lower()
        if head == ".tile":
            if block is not None:
                raise AsmError(ln, f".tile inside the .periodic block of line {block[0]} (missing .end)")
            if len(toks) != 2:
                raise AsmError(ln, ".tile takes one tile number")
            t = _num(toks[1], ln, "tile")
            if not 0 <= t < nt:
                raise AsmError(ln, f".tile {t}: tile outside [0, {nt - 1}]")
            if t in where:
                raise AsmError(ln, f".tile {t} given twice (first at line {where[t]})")
            where[t] = ln
            scheds[t] = []
            cur = t
            continue
        if cur is None:
            raise AsmError(ln, "expected '.tile N' before entries and data")
        if head == ".data":
            rest = line[len(toks[0]):]
            if ":" not in rest:
                raise AsmError(ln, ".data needs 'ADDR: values'")
            a_txt, _, v_txt = rest.partition(":")
            addr = _num(a_txt, ln, ".data address")
            vals = v_txt.split()
            if not vals:
                raise AsmError(ln, ".data without values")
            for i, vt in enumerate(vals):
                a = addr + i
                if not 0 <= a < params.words:
                    raise AsmError(ln, f".data address {a:#x} outside the memory [0, {params.words - 1:#x}]")
                data[cur][a] = _num(vt, ln, ".data value", signed=True) & dmask
            continue
        if head == ".periodic":
            if block is not None:
                raise AsmError(ln, f"nested .periodic (the block of line {block[0]} has no .end)")
            if len(toks) < 2 or not toks[1].startswith("@"):
                raise AsmError(ln, ".periodic needs '@T period=P reps=R'")
            t = _num(toks[1][1:], ln, "T")
            if not 0 <= t <= tmax:
                raise AsmError(ln, f"T={t} outside [0, {tmax}]")
            kv: dict[str, int] = {}
            for tok in toks[2:]:
                k, _, v = tok.partition("=")
                k = k.lower()
                if k not in ("period", "reps") or not v:
                    raise AsmError(ln, f".periodic: expected period=P and reps=R, got {tok!r}")
                if k in kv:
                    raise AsmError(ln, f".periodic: {k} given twice")
                kv[k] = _num(v, ln, k)
            if set(kv) != {"period", "reps"}:
                raise AsmError(ln, ".periodic needs both period= and reps=")
            if not 1 <= kv["period"] <= (1 << params.aw) - 1:
                raise AsmError(ln, f"period={kv['period']} outside [1, {(1 << params.aw) - 1}] (2**aw - 1)")
            if not 1 <= kv["reps"] <= 256:
                raise AsmError(ln, f"reps={kv['reps']} outside [1, 256]")
            block = (ln, t, kv["period"], kv["reps"], [])
            continue
        if head == ".end":
            if block is None:
                raise AsmError(ln, ".end without .periodic")
            bl, t, period, reps, body = block
            if not body:
                raise AsmError(ln, f".periodic block of line {bl} has no body entries (a malformed header is "
                                   "written with the explicit OP15 form)")
            if len(body) > FabricParams.BODY_MAX:
                raise AsmError(ln, f".periodic block of line {bl} has {len(body)} body entries, more than "
                                   f"BODY_MAX = {FabricParams.BODY_MAX}")
            scheds[cur].append(encode(Entry(t=t, op=_PERIODIC, a=period, b=len(body), len=reps - 1), params))
            scheds[cur].extend(encode(e, params) for e in body)
            block = None
            continue
        if head.startswith("@"):
            if block is not None:
                raise AsmError(ln, f"'@T' entry inside the .periodic block of line {block[0]} (body lines "
                                   "start with '+d'; missing .end?)")
            t = _num(toks[0][1:], ln, "T")
            if not 0 <= t <= tmax:
                raise AsmError(ln, f"T={t} outside [0, {tmax}]")
            scheds[cur].append(encode(_parse_op(toks[1:], t, ln, params), params))
            continue
        if head.startswith("+"):
            if block is None:
                raise AsmError(ln, "'+d' body entry outside a .periodic block")
            bl, _t, period, _reps, body = block
            d = _num(toks[0][1:], ln, "phase d")
            if not 0 <= d < period:
                raise AsmError(ln, f"phase +{d} outside [0, period-1 = {period - 1}]")
            if body and d <= body[-1].t:
                raise AsmError(ln, f"phase +{d} is not after the previous phase +{body[-1].t}")
            e = _parse_op(toks[1:], d, ln, params)
            if e.op == _PERIODIC:
                raise AsmError(ln, "a periodic body entry cannot be a PERIODIC header")
            body.append(e)
            continue
        raise AsmError(ln, f"unknown line start {toks[0]!r}")
    if block is not None:
        raise AsmError(block[0], ".periodic block without .end")
    return Program(params, [s if s is not None else [] for s in scheds], data)


# ---- disassembly ----------------------------------------------------------------------------
def _clean(e: Entry) -> bool:
    """The mnemonic form shows this entry (and reassembles to the same word)."""
    if e.op in _MAC_SET or e.op in _COMM_SET:
        return e.unit == 0
    if e.op in RESERVED_OPS or e.op == _PERIODIC or e.unit != 0 or (e.port == 3 and e.op != _RECV):
        return False
    if e.op == _FWD and e.b > 2:
        return False
    return True


def format_entry(e: Entry, prefix: str) -> str:
    """One entry line: ``prefix`` (``@T`` or ``+d``), then the mnemonic or explicit form."""
    if not _clean(e):
        return (f"{prefix:<7} OP{e.op:<4} port={e.port} unit={e.unit} a={e.a} b={e.b} d={e.d} "
                f"len={e.n}")
    shown = _SHOWN[e.op]
    parts = []
    for f in ("port", "src", "a", "b", "d", "len"):
        if f == "src":
            if e.op == _FWD:
                parts.append(f"src={PORT_NAMES[e.b]}")
            continue
        if f == "b" and e.op == _FWD:
            continue
        if f == "port" and e.op in _MAC_SET:
            if e.op in _MV:
                parts += [x for x, bit in (("psum_in=1", 1), ("psum_out=1", 2)) if e.port & bit]
            elif e.port:
                parts.append(f"port={e.port}")
            continue
        v = e.n if f == "len" else getattr(e, f)
        if f in shown or (v != 1 if f == "len" else v != 0):
            parts.append(f"port={PORT_NAMES[v]}" if f == "port" else f"{f}={v}")
    return f"{prefix:<7} {OP_NAMES[e.op]:<5} {' '.join(parts)}".rstrip()


def _block_ok(ents: list[Entry], h: int) -> bool:
    """A header whose block the ``.periodic`` form writes exactly."""
    e = ents[h]
    if e.port or e.unit or e.d or not 1 <= e.a or not 1 <= e.b <= FabricParams.BODY_MAX:
        return False
    if h + e.b >= len(ents):
        return False
    prev = None
    for be in ents[h + 1:h + 1 + e.b]:
        if be.op == _PERIODIC or be.t >= e.a or (prev is not None and be.t <= prev):
            return False
        prev = be.t
    return True


def disassemble(program: Program) -> str:
    """Write a program in the canonical text form of docs/sched.md section 10.

    ``assemble(disassemble(p), p.params) == p`` for any program, illegal words
    included: a word the mnemonic form cannot express exactly (reserved opcode, UNIT != 0,
    PORT 3, a FWD ``B`` above 2, a PERIODIC header whose block is malformed or has
    nonzero PORT/UNIT/D) is written as ``@T OP<n> port=.. unit=.. a=.. b=.. d=.. len=..``.

    Args:
        program: the program.

    Returns:
        The text (one ``.tile`` section per tile, data as ``.data`` runs of nonzero words).
    """
    if not isinstance(program, Program):
        raise ParamError(f"disassemble: expected a Program, got {type(program).__name__}")
    p = program.params
    lines = [f"# lockstep sched program (docs/sched.md section 10): cw={p.cw} nt={p.nt} dw={p.dw} aw={p.aw} "
             f"sd={p.sd} hop_lat={p.hop_lat} buf_d={p.buf_d} l_alu={p.l_alu} bus={p.bus}"
             + (f" k={p.k} accw={p.accw} vpu_shift={p.vpu_shift}" if p.k else "")]
    for t in range(p.nt):
        lines.append(f".tile {t}")
        d = program.data[t]
        addrs = sorted(d)
        i = 0
        while i < len(addrs):
            j = i
            while j + 1 < len(addrs) and addrs[j + 1] == addrs[j] + 1 and j + 1 - i < 16:
                j += 1
            lines.append(f".data {addrs[i]:#x}: " + " ".join(str(d[a]) for a in addrs[i:j + 1]))
            i = j + 1
        ents = [decode(w, p) for w in program.schedules[t]]
        h = 0
        while h < len(ents):
            e = ents[h]
            if e.op == _PERIODIC and _block_ok(ents, h):
                lines.append(f".periodic @{e.t} period={e.a} reps={e.n}")
                for be in ents[h + 1:h + 1 + e.b]:
                    lines.append("  " + format_entry(be, f"+{be.t}"))
                lines.append(".end")
                h += 1 + e.b
            else:
                lines.append(format_entry(e, f"@{e.t}"))
                h += 1
    return "\n".join(lines) + "\n"
