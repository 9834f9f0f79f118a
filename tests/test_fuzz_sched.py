"""Hypothesis fuzz tests of the inputs a user hands the project.

1. Schedule assembly text (docs/sched.md section 10): arbitrary text, token soup built
   from the real mnemonics, registers and numbers, valid programs written by a strategy,
   and the project's own random program builders. The assembler answers a
   :class:`~lockstep.models.sched.Program` or an :class:`~lockstep.models.sched.AsmError`
   that names the line (and the token), and ``assemble(disassemble(p)) == p``.
2. Program words and images: :func:`~lockstep.models.sched.decode` /
   :func:`~lockstep.models.sched.encode` over arbitrary values, the
   :class:`~lockstep.models.sched.Program` image loader the testbenches load through
   (``schedule_image``, ``data_image``), and :func:`~lockstep.models.sched.expand` against
   an expansion written from docs/sched.md section 5.
3. Every family's parameter record (``lockstep.models.record``): construction and
   ``from_dict`` from arbitrary values give a valid record whose ``to_dict`` round-trips
   through JSON, or a :class:`~lockstep.models.record.ParamError` naming the field.

The oracles come from the documentation (field layout, number syntax, expansion rules,
ranges of the parameters), never from the implementation's output. A hang is caught by a
per-example alarm on top of Hypothesis' deadline. No simulator is run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import re
import signal
from datetime import timedelta
from typing import Any, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from lockstep.models import sched as S
from lockstep.models.bfp.params import MX_ELEMENTS, BfpFormat, MxParams
from lockstep.models.gemm.params import GemmParams
from lockstep.models.host.params import HostParams
from lockstep.models.record import ParamError, params_hash
from lockstep.models.sched import AsmError, Entry, EncodeError, Program, ProgramError
from lockstep.models.sched.params import FabricParams
from lockstep.models.sparse.params import SparseParams

# ---- settings -------------------------------------------------------------------------------
#: Wall-clock limit of one example: far above any legitimate answer, so only a hang trips it.
HANG_S = 20.0


def _fuzz(n: int, deadline_ms: int = 2000) -> settings:
    """Settings of one fuzz test: ``n`` examples, a generous deadline (the machine is
    shared), no example database written into the work tree."""
    return settings(max_examples=n, deadline=timedelta(milliseconds=deadline_ms), database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


class Hang(AssertionError):
    """An example did not answer within :data:`HANG_S` seconds."""


@contextlib.contextmanager
def no_hang(seconds: float = HANG_S) -> Iterator[None]:
    """Fail (instead of hanging the run) when the body takes longer than ``seconds``."""
    if not hasattr(signal, "setitimer"):   # pragma: no cover - not POSIX
        yield
        return

    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds} s (a hang)")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ---- shared strategies ----------------------------------------------------------------------
#: An int far too long for Python's int -> decimal string conversion (4300 digits).
HUGE = 1 << 20000
#: Its hex text (5000 hex digits).
HUGE_HEX = hex(HUGE - 1)
#: ``HUGE`` or ``-HUGE`` (kept out of strategy reprs, which would fail to print it).
huge = st.sampled_from([1, -1]).map(lambda sign: sign * HUGE)

MNEMONICS: tuple[str, ...] = tuple(S.OPS) + tuple(S.MAC_OPS) + tuple(FabricParams.COMM_OPCODES)
PORT_NAMES = ("prev", "next", "bus", "fifo")   # docs/sched.md section 10 (+ fifo, section 11)
OP_FIELDS = ("port", "unit", "a", "b", "d", "len")
PERIODIC = 0xF
BODY_MAX = 16          # docs/sched.md section 1


@st.composite
def fabric_params(draw: st.DrawFn, max_nt: int = 4, max_sd: int = 64, max_cw: int = 32,
                  min_sd: int = 4) -> FabricParams:
    """A valid :class:`FabricParams` inside the ranges of docs/sched.md sections 1 and 11
    (the fields the text format and the images depend on; timing fields near default)."""
    aw = draw(st.integers(4, 10))
    dw = draw(st.integers(4, 32))
    nt = draw(st.integers(2, max_nt))
    k = draw(st.sampled_from([k for k in (0, 0, 2, 3, 4, 8) if k * k <= (1 << aw)]))
    rows = draw(st.sampled_from([r for r in range(1, nt + 1) if nt % r == 0 and (r == 1 or nt // r >= 2)]))
    return FabricParams(cw=draw(st.integers(8, max_cw)), nt=nt, rows=rows, dw=dw, aw=aw,
                        sd=draw(st.integers(min_sd, max_sd)), hop_lat=draw(st.integers(1, 3)), bus=draw(st.booleans()),
                        k=k, accw=max(32, 2 * dw), comm=draw(st.booleans()))


def _number_text(v: int, style: str) -> str:
    """``v >= 0`` written in one of the documented number forms (leading zeros allowed)."""
    if style == "hex":
        return f"0x{v:x}"
    if style == "HEX":
        return f"0X{v:X}"
    if style == "bin":
        return f"0b{v:b}"
    if style == "zeros":
        return f"00{v}"
    return str(v)


@functools.lru_cache(maxsize=None)
def num(lo: int, hi: int) -> st.SearchStrategy[tuple[int, str]]:
    """``(value, text)``: a value in ``[lo, hi]`` written as decimal, hex or binary."""
    return st.tuples(st.integers(lo, hi), st.sampled_from(["dec", "dec", "hex", "HEX", "bin", "zeros"])).map(
        lambda vs: (vs[0], _number_text(*vs)))


@functools.lru_cache(maxsize=None)
def cased(word: str) -> st.SearchStrategy[str]:
    """``word`` in lower, upper or its own case (mnemonics, fields and ports are case-blind)."""
    return st.sampled_from(sorted({word, word.lower(), word.upper(), word.capitalize()}))


#: Text that is, or almost is, a number: the documented forms and their near misses.
number_soup = st.one_of(
    st.integers(0, 300).map(str),
    st.integers(0, 2 ** 34).map(hex),
    st.integers(0, 64).map(bin),
    st.integers(-300, -1).map(str),
    st.integers(2 ** 32 - 2, 2 ** 70).map(str),
    st.sampled_from([HUGE_HEX, "9" * 5000, "0b" + "1" * 20000, "0x", "0b2", "1e3", "\u0663", "\uff11\uff12", "0x-5",
                     "-0x5", "1_0", "_", "", "00", "+7", "0X1F", "0B11", "nan", "-", "0x 1", "\u00b2"]),
    st.text(alphabet="0123456789abcdefxXbB_+-", max_size=6),
)

junk_token = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=6)


_soup_value = st.one_of(number_soup, st.sampled_from(PORT_NAMES + ("PREV", "Fifo", "east", "")), junk_token)
_soup_key = st.sampled_from(OP_FIELDS + ("src", "psum_in", "psum_out", "period", "reps", "x", "", "LEN", "Port"))
_soup_field = st.builds(lambda k, v: f"{k}={v}", _soup_key, _soup_value)
_soup_opcode = st.one_of(st.sampled_from(MNEMONICS).flatmap(cased), number_soup.map(lambda s: "OP" + s), junk_token)
_soup_kind = st.sampled_from(["entry", "entry", "body", "tile", "data", "periodic", "end", "comment", "empty", "junk"])


@st.composite
def soup_line(draw: st.DrawFn) -> str:
    """One line of token soup: the assembler's own vocabulary, mutated and mixed."""
    kind = draw(_soup_kind)
    toks: list[str]
    if kind == "entry":
        toks = ["@" + draw(number_soup), draw(_soup_opcode)] + draw(st.lists(_soup_field, max_size=5))
    elif kind == "body":
        toks = ["+" + draw(number_soup), draw(_soup_opcode)] + draw(st.lists(_soup_field, max_size=4))
    elif kind == "tile":
        toks = [draw(cased(".tile"))] + draw(st.lists(st.one_of(st.integers(0, 5).map(str), number_soup),
                                                      min_size=0, max_size=2))
    elif kind == "data":
        vals = draw(st.lists(st.one_of(st.integers(-70000, 70000).map(str), number_soup), max_size=6))
        toks = [".data", draw(number_soup) + draw(st.sampled_from([":", " :", "", ": "]))] + vals
    elif kind == "periodic":
        kv = draw(st.lists(st.builds(lambda k, v: f"{k}={v}", st.sampled_from(["period", "reps", "Period", "x"]),
                                     number_soup), max_size=3))
        toks = [".periodic", "@" + draw(number_soup)] + kv
    elif kind == "end":
        toks = [draw(cased(".end"))] + draw(st.lists(junk_token, max_size=1))
    elif kind == "comment":
        toks = ["#" + draw(st.text(max_size=10))]
    elif kind == "empty":
        toks = []
    else:
        toks = draw(st.lists(st.one_of(junk_token, _soup_field, _soup_opcode), max_size=4))
    sep = draw(st.sampled_from([" ", "  ", "\t", " \t "]))
    line = draw(st.sampled_from(["", "  "])) + sep.join(toks)
    if draw(st.booleans()):
        line += " # " + draw(st.text(max_size=8))
    return line


@st.composite
def soup_text(draw: st.DrawFn) -> str:
    """Token-soup program text; most start with a ``.tile`` line so the parser gets far."""
    lines = draw(st.lists(soup_line(), max_size=14))
    if draw(st.integers(0, 3)):
        lines.insert(0, f".tile {draw(st.integers(0, 2))}")
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines) + draw(st.sampled_from(["", "\n"]))


# ---- assembler checks -----------------------------------------------------------------------
#: Line breaks of a text file: Python's universal newlines (how the testbench reads a .s
#: file, ``Path.read_text``) and every editor's: ``\n``, ``\r\n``, ``\r``.
_BREAK = re.compile(r"\r\n|\r|\n")
_UNCLOSED = re.compile(r"line \d+: \.periodic block without \.end")


def text_lines(text: str) -> list[str]:
    """The lines of ``text`` as an editor numbers them (line ``i`` is ``[i - 1]``)."""
    return _BREAK.split(text)


def asm_outcome(text: str, p: FabricParams) -> Program | AsmError:
    """The program, or the documented error; any other exception fails the test."""
    try:
        with no_hang():
            return S.assemble(text, p)
    except AsmError as ex:
        return ex


def check_asm(text: str, p: FabricParams) -> Program | AsmError:
    """Assemble ``text`` and check what the documentation promises of the answer:

    * a program reassembles from its disassembly, which is canonical (a fixed point);
    * an error is an :class:`AsmError` (a ``ParamError`` and ``ValueError``) whose message
      starts ``line N:``, N a line of the text holding a statement; it is the first bad
      line: the lines before it assemble (a ``.periodic`` block may still be open there),
      and the text cut after line N fails with the same message. An unclosed block is
      reported at its ``.periodic`` line.
    """
    out = asm_outcome(text, p)
    if isinstance(out, Program):
        assert out.params == p and len(out.schedules) == p.nt
        txt = S.disassemble(out)
        back = S.assemble(txt, p)
        assert back == out
        assert S.disassemble(back) == txt
        return out
    assert isinstance(out, ParamError) and isinstance(out, ValueError)
    msg = str(out)
    lines = text_lines(text)
    assert 1 <= out.line <= len(lines), (out.line, len(lines), msg)
    assert msg.startswith(f"line {out.line}: ") and len(msg) > len(f"line {out.line}: ") + 3, msg
    stmt = lines[out.line - 1].split("#", 1)[0].strip()
    assert stmt, f"error {msg!r} names line {out.line}, which holds no statement: {lines[out.line - 1]!r}"
    if _UNCLOSED.fullmatch(msg):
        assert stmt.split()[0].lower() == ".periodic", msg
        return out
    before = asm_outcome("\n".join(lines[:out.line - 1]), p)
    assert isinstance(before, Program) or _UNCLOSED.fullmatch(str(before)), \
        f"the lines before line {out.line} fail with {before!r}; the error {msg!r} is not the first"
    cut = asm_outcome("\n".join(lines[:out.line]), p)
    assert isinstance(cut, AsmError) and str(cut) == msg, (str(cut), msg)
    return out


# ---- 1. assembly text -----------------------------------------------------------------------
@_fuzz(300)
@given(text=st.text(max_size=160), p=fabric_params())
@example(text="\x0c.tile 0\x0c@5 JUMP", p=FabricParams())
@example(text=".tile 0\n\u2028@5 NOP x", p=FabricParams())
@example(text=".tile 0\r@5 JUMP\r", p=FabricParams())
def test_assemble_arbitrary_text(text: str, p: FabricParams) -> None:
    """Any text (control characters, line separators, unicode): a program or an AsmError
    at the right line."""
    check_asm(text, p)


@_fuzz(150)
@given(text=soup_text(), p=fabric_params())
@example(text=f".tile 0\n@{HUGE_HEX} NOP", p=FabricParams())
@example(text=f".tile 0\n@5 SEND len={HUGE_HEX}", p=FabricParams())
@example(text=f".tile {HUGE_HEX}", p=FabricParams())
@example(text=f".tile 0\n.periodic @5 period={HUGE_HEX} reps=2\n+0 NOP\n.end", p=FabricParams())
@example(text=f".tile 0\n.periodic @5 period=3 reps=2\n+{HUGE_HEX} NOP\n.end", p=FabricParams())
@example(text=f".tile 0\n@5 SEND a={HUGE_HEX}", p=FabricParams())
@example(text=f".tile 0\n.data 0: {'9' * 5000}", p=FabricParams())
def test_assemble_token_soup(text: str, p: FabricParams) -> None:
    """Lines built from the real vocabulary (mnemonics in any case, OP<n>, fields, ports,
    directives) with wrong, huge, negative, unicode and malformed numbers."""
    check_asm(text, p)


_NUMBER = re.compile(r"0x[0-9a-f]+|0b[01]+|[0-9]+", re.ASCII)
#: A decimal this long cannot be converted by ``int`` (Python's 4300-digit limit); the
#: assembler may take it or refuse it, but with an AsmError.
_LONG_DECIMAL = 4300


def doc_number(tok: str, signed: bool = False) -> int | None:
    """The value of a number token by docs/sched.md section 10 ("decimal, 0x hex or 0b
    binary"; ``.data`` values may be negative), case-blind, ``_`` digit separators
    ignored (as ``@1_000``); None when it is not a number."""
    s = tok.strip().lower().replace("_", "")
    sign = 1
    if signed and s[:1] in ("-", "+"):
        sign, s = (-1 if s[0] == "-" else 1), s[1:]
    if not _NUMBER.fullmatch(s):
        return None
    if s.startswith("0x"):
        return sign * int(s[2:], 16)
    if s.startswith("0b"):
        return sign * int(s[2:], 2)
    return sign * int(s)


#: Where a number is written, the text around it, and the documented range there.
NUMBER_PLACES: dict[str, tuple[str, Any]] = {
    "T": (".tile 0\n@{} NOP", lambda p: (0, (1 << p.cw) - 1)),
    "a": (".tile 0\n@5 SEND a={}", lambda p: (0, p.words - 1)),
    "len": (".tile 0\n@5 SEND len={}", lambda p: (1, 256)),
    "tile": (".tile {}\n@5 NOP", lambda p: (0, p.nt - 1)),
    "data": (".tile 0\n.data 3: {}", lambda p: (-math.inf, math.inf)),
    "addr": (".tile 0\n.data {}: 7", lambda p: (0, p.words - 1)),
    "period": (".tile 0\n.periodic @5 period={} reps=2\n+0 NOP\n.end", lambda p: (1, p.words - 1)),
    "phase": (".tile 0\n.periodic @5 period=9 reps=2\n+{} NOP\n.end", lambda p: (0, 8)),
}


@_fuzz(300)
@given(tok=number_soup, where=st.sampled_from(sorted(NUMBER_PLACES)), p=fabric_params(max_nt=3))
@example(tok="-0x-5", where="data", p=FabricParams())
@example(tok="0x+5", where="data", p=FabricParams())
@example(tok="0x 10", where="addr", p=FabricParams())
@example(tok="\u0663", where="T", p=FabricParams())
@example(tok="0x-1", where="a", p=FabricParams())
def test_assemble_number_syntax(tok: str, where: str, p: FabricParams) -> None:
    """A number is accepted exactly when it has the documented syntax, and means its
    value (then range-checked where it is used); anything else is an AsmError naming the
    token."""
    assume(where == "addr" or not any(c.isspace() for c in tok))
    pattern, bounds = NUMBER_PLACES[where]
    out = check_asm(pattern.format(tok), p)
    digits = tok.strip().lower().lstrip("+-").replace("_", "")
    if digits.isascii() and digits.isdigit() and len(digits) >= _LONG_DECIMAL:
        return                      # too long for int(): only "an AsmError or a program" (checked)
    v = doc_number(tok, signed=where == "data")
    lo, hi = bounds(p)
    if v is None or not lo <= v <= hi:
        assert isinstance(out, AsmError), f"{tok!r} accepted as a number in {where}"
        if v is None and tok.strip():
            assert repr(tok) in str(out) or repr(f" {tok}") in str(out), str(out)
        return
    assert isinstance(out, Program), f"{tok!r} ({v}) refused in {where}: {out}"
    got = {"T": lambda: out.entries(0)[0].t, "a": lambda: out.entries(0)[0].a, "len": lambda: out.entries(0)[0].n,
           "tile": lambda: next(t for t in range(p.nt) if out.schedules[t]),
           "data": lambda: out.data[0].get(3, 0), "addr": lambda: next(iter(out.data[0])),
           "period": lambda: out.entries(0)[0].a, "phase": lambda: out.entries(0)[1].t}[where]()
    assert got == (v % (1 << p.dw) if where == "data" else v)


# ---- valid assembly written by a strategy, with its expected entries ------------------------
_OP_MNEMONICS = st.sampled_from([m for m in MNEMONICS if m != "PERIODIC"])
_OP_FIELD_ORDER = st.permutations(OP_FIELDS)


def op_line(draw: st.DrawFn, p: FabricParams, prefix: str) -> tuple[str, Entry]:
    """A mnemonic or explicit entry line after ``prefix`` (``@T`` or ``+d``) and the entry
    docs/sched.md sections 2, 10 and 11 say it assembles to (its ``t`` set by the caller)."""
    amax = p.words - 1
    explicit = draw(st.integers(0, 5)) == 0
    name = draw(_OP_MNEMONICS)
    op = draw(st.integers(0, 14)) if explicit else {**S.OPS, **S.MAC_OPS, **FabricParams.COMM_OPCODES}[name]
    vals = {"port": 0, "unit": 0, "a": 0, "b": 0, "d": 0, "len": 0}
    parts = [f"OP{op}" if explicit else draw(cased(name))]
    for f in draw(_OP_FIELD_ORDER):
        if not draw(st.booleans()) and not (f == "len" and op == S.MAC_OPS["LDW"]):
            continue            # omitted: 0, len 1 (LDW's default count is not documented: always given)
        if f == "port":
            if not explicit and op in (S.MAC_OPS["MATVEC"], S.MAC_OPS["MATVR"]) and draw(st.booleans()):
                pin, pout = draw(st.integers(0, 1)), draw(st.integers(0, 1))
                parts += [f"{draw(cased('psum_in'))}={pin}", f"psum_out={pout}"]
                vals["port"] = pin | pout << 1
                continue
            v = draw(st.integers(0, 3))
            parts.append(f"{draw(cased('port'))}=" + (draw(cased(PORT_NAMES[v])) if draw(st.booleans())
                                                       else str(v)))
        elif f == "b" and not explicit and op == S.OPS["FWD"] and draw(st.booleans()):
            v = draw(st.integers(0, 3))
            parts.append("src=" + (PORT_NAMES[v] if draw(st.booleans()) else str(v)))
        elif f == "len":
            v, t = draw(num(1, 256))
            parts.append(f"len={t}")
            v -= 1
        else:
            v, t = draw(num(0, 3 if f == "unit" else amax))
            parts.append(f"{draw(cased(f))}={t}")
        vals[f] = v
    return f"{prefix} {' '.join(parts)}", Entry(t=0, op=op, **vals)


@st.composite
def valid_program_text(draw: st.DrawFn) -> tuple[FabricParams, str, list[list[Entry]], list[dict[int, int]]]:
    """A valid program text with the entries and data the documentation says it holds."""
    p = draw(fabric_params())
    tmax = (1 << p.cw) - 1
    ents: list[list[Entry]] = [[] for _ in range(p.nt)]
    data: list[dict[int, int]] = [{} for _ in range(p.nt)]
    tiles = draw(st.lists(st.integers(0, p.nt - 1), unique=True, max_size=p.nt))
    out: list[str] = [f"# {draw(st.text(st.characters(blacklist_characters=chr(10) + chr(13)), max_size=10))}"]
    for t in tiles:
        out.append(f"{draw(cased('.tile'))} {draw(num(t, t))[1]}")
        free = list(range(p.words))
        for _ in range(draw(st.integers(0, 5))):
            kind = draw(st.sampled_from(["op", "op", "data", "periodic", "comment"]))
            if kind == "op":
                (tv, tt) = draw(num(0, tmax))
                line, e = op_line(draw, p, f"@{tt}")
                out.append(line)
                ents[t].append(e.replace(t=tv))
            elif kind == "data" and free:
                a0 = draw(st.sampled_from(free))
                n = draw(st.integers(1, 6))
                addrs = [a for a in range(a0, min(a0 + n, p.words)) if a in free]
                addrs = addrs[:next((i for i in range(1, len(addrs)) if addrs[i] != addrs[i - 1] + 1), len(addrs))]
                vs = [draw(st.integers(-(1 << p.dw), (1 << (p.dw + 2)))) for _ in addrs]
                out.append(f".data {draw(num(a0, a0))[1]}: " + " ".join(str(v) for v in vs))
                for a, v in zip(addrs, vs):
                    free.remove(a)
                    if v % (1 << p.dw):
                        data[t][a] = v % (1 << p.dw)
            elif kind == "periodic":
                base, bt = draw(num(0, tmax))
                period, pt = draw(num(1, p.words - 1))
                reps, rt = draw(num(1, 256))
                top = min(period, 1 << p.cw)      # a phase is below P and fits T's cw bits
                phases = sorted(draw(st.sets(st.integers(0, top - 1), min_size=1, max_size=min(BODY_MAX, top))))
                order = draw(st.sampled_from([f"period={pt} reps={rt}", f"reps={rt} period={pt}"]))
                out.append(f".periodic @{bt} {order}")
                ents[t].append(Entry(t=base, op=PERIODIC, a=period, b=len(phases), len=reps - 1))
                for d in phases:
                    line, e = op_line(draw, p, f"  +{d}")
                    out.append(line)
                    ents[t].append(e.replace(t=d))
                out.append(".end")
            else:
                out.append(draw(st.sampled_from(["", "   ", "# note", "\t# x y z"])))
    return p, "\n".join(out) + "\n", ents, data


@_fuzz(100)
@given(case=valid_program_text())
def test_assemble_valid_text(case: tuple) -> None:
    """Valid text assembles to exactly the entries and data the documentation describes,
    and round-trips through the disassembler."""
    p, text, ents, data = case
    prog = check_asm(text, p)
    assert isinstance(prog, Program), f"{prog}\n{text}"
    for t in range(p.nt):
        assert prog.entries(t) == ents[t], t
        assert prog.data[t] == data[t], t


#: Junk that is no number, mnemonic, ``OP<n>``, port name or field name (no digit, and
#: none of the letters a-f, o, p, t, u, x).
JUNK = st.text(alphabet="ghijklmnqrsvwyz!$%&*/?", min_size=1, max_size=6)


@_fuzz(70)
@given(case=valid_program_text(), data=st.data())
def test_assemble_error_names_line_and_token(case: tuple, data: st.DataObject) -> None:
    """One token of a valid text (the time, the opcode, a field's name or value) replaced
    by junk: an AsmError at that line naming the junk."""
    p, text, _, _ = case
    lines = text.split("\n")
    spots = [(i, j) for i, ln in enumerate(lines) if ln.strip().startswith(("@", "+"))
             for j in range(len(ln.split()))]
    assume(spots)
    i, j = data.draw(st.sampled_from(spots), label="line, token")
    toks = lines[i].split()
    junk = data.draw(JUNK, label="junk")
    if j == 0:
        toks[0] = toks[0][0] + junk                       # @junk / +junk
    elif j == 1:
        toks[1] = junk                                    # the opcode
    elif data.draw(st.booleans(), label="key"):
        toks[j] = junk + "=" + toks[j].partition("=")[2]
    else:
        toks[j] = toks[j].partition("=")[0] + "=" + junk
    lines[i] = " ".join(toks)
    bad = "\n".join(lines)
    out = check_asm(bad, p)
    assert isinstance(out, AsmError), bad
    assert out.line == i + 1, (out.line, i + 1, str(out))
    assert repr(junk) in str(out), str(out)


# ---- round trips of the project's own programs ----------------------------------------------
@_fuzz(40, deadline_ms=8000)
@given(p=fabric_params(max_nt=4, max_cw=24, min_sd=24), seed=st.integers(0, 2 ** 32),
       n_txn=st.integers(1, 8), rule=st.sampled_from((None,) + S.ILLEGAL_RULES))
def test_round_trip_builder_programs(p: FabricParams, seed: int, n_txn: int, rule: str | None) -> None:
    """``assemble(disassemble(p)) == p`` for random legal programs (which stay lint-clean)
    and for their illegal variants (reserved opcodes, malformed periodic blocks, ...)."""
    with no_hang():
        prog = S.random_program(seed, p, n_txn=n_txn)
        if rule is not None:
            try:
                prog, _ = S.illegal_variant(seed, prog, rule)
            except ValueError as ex:
                assume("offers no place" not in str(ex))
                raise
    txt = S.disassemble(prog)
    back = S.assemble(txt, p)
    assert back == prog
    assert S.disassemble(back) == txt
    if rule is None:
        with no_hang():
            assert S.lint(back) == []


# ---- 2. words and images ----------------------------------------------------------------------
def doc_layout(p: FabricParams) -> list[tuple[str, int, int]]:
    """``(field, shift, width)`` of docs/sched.md section 2: ``T|OP|PORT|UNIT|A|B|D|LEN``,
    MSB first, LEN the low 8 bits."""
    widths = [("t", p.cw), ("op", 4), ("port", 2), ("unit", 2), ("a", p.aw), ("b", p.aw), ("d", p.aw), ("len", 8)]
    out, pos = [], 0
    for name, w in reversed(widths):
        out.append((name, pos, w))
        pos += w
    return out[::-1]


def doc_ew(p: FabricParams) -> int:
    """Entry width of docs/sched.md section 1: ``cw + 16 + 3*aw``."""
    return p.cw + 16 + 3 * p.aw


def is_int(v: Any) -> bool:
    """An int value in the documented sense: Python or numpy integers, bools excluded."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def wild_int(lo: int, hi: int) -> st.SearchStrategy[Any]:
    """Mostly ints in ``[lo, hi]``, plus out-of-range, huge, negative and non-int values."""
    return st.one_of(
        st.integers(lo, hi), st.integers(lo, hi),
        st.integers(), st.sampled_from([-1, hi + 1, 2 ** 64, -(2 ** 64)]), huge,
        st.integers(lo, min(hi, 2 ** 63 - 1)).map(np.int64), st.integers(lo, min(hi, 2 ** 64 - 1)).map(np.uint64),
        st.booleans(), st.floats(), st.none(), st.text(max_size=2),
        st.just(float(lo)))


@_fuzz(200)
@given(p=fabric_params(), data=st.data())
@example(p=FabricParams(), data=None)
def test_decode_arbitrary_word(p: FabricParams, data: st.DataObject | None) -> None:
    """``decode`` over any value: an Entry with the fields of section 2 (and
    ``encode(decode(w)) == w``), or an EncodeError for a non-int or a word outside
    ``[0, 2**ew)``."""
    ew = doc_ew(p)
    assert p.ew == ew
    words = [HUGE, -HUGE, 1 << ew, -1, (1 << ew) - 1, 0, True, 1.0, None, "5", np.uint64(2 ** 64 - 1)] \
        if data is None else [data.draw(wild_int(0, (1 << ew) - 1))]
    for w in words:
        try:
            with no_hang():
                e = S.decode(w, p)
        except EncodeError as ex:
            assert not (is_int(w) and 0 <= int(w) < 1 << ew), f"{w!r} refused: {ex}"
            assert "word" in str(ex)
            continue
        assert is_int(w) and 0 <= int(w) < 1 << ew, f"{w!r} decoded to {e}"
        assert isinstance(e, Entry)
        for name, shift, width in doc_layout(p):
            assert getattr(e, name) == (int(w) >> shift) & ((1 << width) - 1), name
        assert S.encode(e, p) == int(w)


@_fuzz(150)
@given(p=fabric_params(), data=st.data())
def test_encode_arbitrary_entry(p: FabricParams, data: st.DataObject) -> None:
    """``encode`` of an Entry with any field values: the packed word of section 2, or an
    EncodeError naming a field that is not an int of its width."""
    layout = doc_layout(p)
    vals = {name: data.draw(wild_int(0, (1 << width) - 1), label=name) for name, _, width in layout}
    bad = [name for name, _, width in layout if not (is_int(vals[name]) and 0 <= int(vals[name]) < 1 << width)]
    try:
        with no_hang():
            w = S.encode(Entry(**vals), p)
    except EncodeError as ex:
        assert bad, f"{vals} refused: {ex}"
        assert any(re.search(rf"\b{name}\b[^=]*=", str(ex)) for name in bad), str(ex)
        return
    assert not bad, f"{bad} accepted"
    assert w == sum(int(vals[name]) << shift for name, shift, _ in layout)
    assert S.decode(w, p) == Entry(**{k: int(v) for k, v in vals.items()})


def doc_expand(ents: list[Entry], cw: int) -> list[tuple[Entry, bool]]:
    """docs/sched.md section 5: ``(entry with absolute T, poison)`` for each expanded entry.
    For a poison only its T is documented."""
    mask = (1 << cw) - 1
    out: list[tuple[Entry, bool]] = []
    h, n = 0, len(ents)
    while h < n:
        e = ents[h]
        if e.op != PERIODIC:
            out.append((e, False))
            h += 1
            continue
        base, period, nb, reps = e.t, e.a, e.b, e.len + 1
        if period == 0 or nb == 0 or nb > BODY_MAX or h + nb > n - 1:
            out.append((e, True))          # bad header: poison at T = base, continue after it
            h += 1
            continue
        body = ents[h + 1:h + 1 + nb]
        bad = next((j for j, be in enumerate(body) if be.t >= period or be.op == PERIODIC
                    or (j and be.t <= body[j - 1].t)), None)
        if bad is None:
            out += [(be.replace(t=(base + r * period + be.t) & mask), False) for r in range(reps) for be in body]
        else:
            out += [(be.replace(t=(base + be.t) & mask), False) for be in body[:bad]]
            out.append((body[bad].replace(t=(base + body[bad].t) & mask), True))
        h += 1 + nb
    return out


@st.composite
def image_entries(draw: st.DrawFn, p: FabricParams, max_words: int, min_words: int = 0) -> list[Entry]:
    """Entries of a schedule image rich in PERIODIC headers, good and bad, and short
    phases (so well-formed blocks occur)."""
    amax = p.words - 1
    small = st.integers(0, min(amax, 20))
    entry = st.builds(
        Entry, t=st.one_of(st.integers(0, 20), st.integers(0, (1 << p.cw) - 1)), op=st.integers(0, 15),
        port=st.integers(0, 3), unit=st.sampled_from([0, 0, 0, 1, 3]), a=st.one_of(small, st.integers(0, amax)),
        b=st.one_of(small, st.integers(0, amax)), d=st.integers(0, amax), len=st.integers(0, 255))
    header = st.builds(Entry, t=st.integers(0, (1 << p.cw) - 1), op=st.just(PERIODIC), a=st.integers(0, min(amax, 30)),
                       b=st.integers(0, min(amax, 18)), len=st.integers(0, 255), port=st.sampled_from([0, 0, 1]),
                       d=st.sampled_from([0, 0, 2]))
    return draw(st.lists(st.one_of(entry, entry, header), min_size=min_words, max_size=max_words))


@_fuzz(100)
@given(p=fabric_params(max_nt=3, max_sd=40), data=st.data())
def test_expand_matches_section5(p: FabricParams, data: st.DataObject) -> None:
    """``expand`` of any image agrees with the expansion rules of docs/sched.md section 5."""
    ents = data.draw(image_entries(p, 40))
    words = [S.encode(e, p) for e in ents]
    with no_hang():
        got = S.expand(words, p)
    want = doc_expand(ents, p.cw)
    assert [x.poison for x in got] == [w[1] for w in want]
    for x, (e, poison) in zip(got, want):
        assert x.entry.t == e.t
        if not poison:
            assert x.entry == e
        assert 0 <= x.src < len(words)


@st.composite
def image_case(draw: st.DrawFn) -> tuple[FabricParams, Any, Any]:
    """``(params, schedules, data)`` as a user hands them to :class:`Program`: mostly
    right, sometimes the wrong count of tiles, a word or address out of range or not an
    int, a data image too long."""
    p = draw(fabric_params(max_nt=3, max_sd=10))
    ew = doc_ew(p)
    nt = draw(st.sampled_from([p.nt] * 6 + [p.nt - 1, p.nt + 1]))
    word = st.one_of(st.builds(S.encode, image_entries(p, 1, 1).map(lambda es: es[0]), st.just(p)),
                     st.integers(0, (1 << ew) - 1), wild_int(0, (1 << ew) - 1))
    scheds = draw(st.lists(st.lists(word, max_size=p.sd + 2), min_size=nt, max_size=nt))
    value = st.one_of(st.integers(-(1 << (p.dw + 1)), 1 << (p.dw + 1)), wild_int(0, (1 << p.dw) - 1))
    addr = st.one_of(st.integers(0, p.words - 1), wild_int(0, p.words - 1))
    image = st.one_of(
        st.none(),
        st.dictionaries(addr, value, max_size=6),
        st.lists(value, max_size=p.words + 1),
        st.lists(st.integers(-(1 << p.dw), 1 << p.dw), max_size=p.words).map(lambda v: np.array(v, dtype=np.int64)))
    nd = draw(st.sampled_from([nt] * 6 + [nt + 1]))
    data = draw(st.one_of(st.none(), st.lists(image, min_size=nd, max_size=nd)))
    return p, scheds, data


def doc_image_ok(p: FabricParams, scheds: list, data: list | None) -> bool:
    """Is this a program by the documentation of :class:`Program` (``nt`` schedules of
    ints in ``[0, 2**ew)``, ``nt`` data images: dicts ``{address: int}`` with addresses in
    ``[0, 2**aw)``, sequences of at most ``2**aw`` ints, or None)?"""
    if len(scheds) != p.nt or any(not is_int(w) or not 0 <= int(w) < 1 << doc_ew(p) for s in scheds for w in s):
        return False
    if data is None:
        return True
    if len(data) != p.nt:
        return False
    for d in data:
        if d is None:
            continue
        items = list(d.items()) if isinstance(d, dict) else list(enumerate(list(d)))
        if not isinstance(d, dict) and len(items) > p.words:
            return False
        if any(not is_int(a) or not 0 <= int(a) < p.words or not is_int(v) for a, v in items):
            return False
    return True


@_fuzz(100)
@given(case=image_case())
def test_program_image_loader(case: tuple) -> None:
    """The images the testbench loads (``schedule_image``, ``data_image``): a Program is
    built exactly when the documentation allows it, else ProgramError; its images hold
    the given words (zero-padded to ``sd``; more than ``sd`` is the SIZE error) and the
    data reduced modulo ``2**dw``; the schedule image expands per section 5."""
    p, scheds, data = case
    ok = doc_image_ok(p, scheds, data)
    try:
        with no_hang():
            prog = Program(p, scheds, data)
    except ProgramError as ex:
        assert not ok, f"refused: {ex}"
        assert re.search(r"\btile\b|Program", str(ex)), str(ex)
        return
    assert ok, "an image the documentation refuses was accepted"
    for t in range(p.nt):
        words = [int(w) for w in scheds[t]]
        if len(words) > p.sd:
            with pytest.raises(ProgramError, match="SIZE"):
                prog.schedule_image(t)
            continue
        img = prog.schedule_image(t)
        assert img == words + [0] * (p.sd - len(words))
        got = S.expand(img, p)
        assert [x.poison for x in got] == [w[1] for w in doc_expand([S.decode(w, p) for w in img], p.cw)]
        dimg = prog.data_image(t)
        want = np.zeros(p.words, dtype=object)
        d = None if data is None else data[t]
        for a, v in (d.items() if isinstance(d, dict) else enumerate(list(d)) if d is not None else []):
            want[int(a)] = int(v) % (1 << p.dw)
        assert dimg.shape == (p.words,) and [int(x) for x in dimg] == list(want)
    for bad in (-1, p.nt, 1.0, None, HUGE):
        with pytest.raises(ProgramError, match="tile"):
            prog.schedule_image(bad)


@_fuzz(30, deadline_ms=10000)
@given(p=fabric_params(max_nt=3, max_sd=12, max_cw=10), data=st.data())
def test_lint_arbitrary_image(p: FabricParams, data: st.DataObject) -> None:
    """The linter answers on any image (illegal words, malformed blocks, SIZE): a list of
    violations of known rules, never another exception, never a hang."""
    scheds = [[S.encode(e, p) for e in data.draw(image_entries(p, p.sd + 2))] for _ in range(p.nt)]
    prog = Program(p, scheds)
    with no_hang():
        found = S.lint(prog)
    for v in found:
        assert v.rule in S.LINT_RULES and -1 <= v.tile < p.nt and v.message.startswith(v.rule), v
    assert any(v.rule == "SIZE" for v in found) == any(len(s) > p.sd for s in scheds)


# ---- 3. parameter records ---------------------------------------------------------------------
RECORDS = (FabricParams, BfpFormat, MxParams, SparseParams, GemmParams, HostParams)
#: The documented choices of the string fields.
STR_CHOICES: dict[tuple[type, str], tuple[str, ...]] = {
    (BfpFormat, "rounding"): BfpFormat.ROUNDINGS, (BfpFormat, "overflow"): BfpFormat.OVERFLOWS,
    (BfpFormat, "stat_policy"): BfpFormat.STAT_POLICIES, (MxParams, "elem"): tuple(MX_ELEMENTS),
}


def _default(cls: type, f: dataclasses.Field) -> Any:
    """The field's default (for the required ``MxParams.elem``, a valid element)."""
    return f.default if f.default is not dataclasses.MISSING else "int8"   # MxParams.elem is required


def wild_value(cls: type, f: dataclasses.Field) -> st.SearchStrategy[Any]:
    """Values for field ``f``: near its default (often valid), 0, negative, huge, and of
    the wrong type."""
    kind = str(f.type)
    other = st.one_of(st.none(), st.floats(), st.text(max_size=4), st.just([1]), st.just(b"1"),
                      st.integers(-5, 5).map(np.int64))
    if kind == "bool":
        return st.one_of(st.booleans(), st.booleans(), st.integers(0, 1), other)
    if kind == "str":
        return st.one_of(st.sampled_from(STR_CHOICES[(cls, f.name)]), st.sampled_from(STR_CHOICES[(cls, f.name)]),
                         st.integers(), other)
    d = _default(cls, f)
    near = st.integers(-3, 3).map(lambda x: (d if d is not None else 40) + x)
    ints = st.one_of(near, near, st.integers(0, 70), st.sampled_from([0, -1, 2 ** 31, 2 ** 64, -(2 ** 64)]), huge,
                     st.integers(), st.sampled_from([(d or 40) * 2, (d or 40) // 2]))
    if "None" in kind:
        return st.one_of(st.none(), ints, st.booleans(), other)
    return st.one_of(ints, ints, ints, st.booleans(), other)


def names_field(msg: str, names: Any) -> bool:
    """Does the message name one of the fields ``names`` (as a word)?"""
    return any(re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", msg) for n in names)


def same_as_default(cls: type, f: dataclasses.Field, v: Any) -> bool:
    """``v`` is the field's default, of the same type (so it cannot be what is wrong)."""
    d = _default(cls, f)
    return type(v) is type(d) and v == d


def check_record(cls: type, obj: Any) -> None:
    """A valid record: JSON round trip, stable hash, every derived property answers."""
    d = obj.to_dict()
    assert set(d) == {f.name for f in dataclasses.fields(cls)}
    blob = json.dumps(d)
    back = cls.from_dict(json.loads(blob))
    assert back == obj and back.to_dict() == d
    assert params_hash(back) == params_hash(obj) and re.fullmatch(r"[0-9a-f]{12}", params_hash(obj))
    for name in dir(cls):
        if isinstance(getattr(cls, name, None), property):
            getattr(obj, name)
    if isinstance(obj, FabricParams):
        assert obj.ew == doc_ew(obj)
        assert sum(obj.field_width(f) for f in obj.ENTRY_FIELDS) == obj.ew
        for t in range(obj.nt):
            for port in (0, 1):
                dt, dp = obj.link_dest(t, port)
                assert 0 <= dt < obj.nt and dp == 1 - port and obj.link_src(dt, dp) == (t, port)
            assert obj.psum_src(obj.psum_dest(t)) == t


@st.composite
def record_kwargs(draw: st.DrawFn) -> tuple[type, dict[str, Any]]:
    """A record class and keyword arguments for some of its fields (MxParams' required
    ``elem`` always given)."""
    cls = draw(st.sampled_from(RECORDS))
    fields = dataclasses.fields(cls)
    chosen = draw(st.lists(st.sampled_from(fields), unique_by=lambda f: f.name, max_size=4))
    if cls is MxParams and all(f.name != "elem" for f in chosen):
        chosen.append(next(f for f in fields if f.name == "elem"))
    return cls, {f.name: draw(wild_value(cls, f), label=f"{cls.__name__}.{f.name}") for f in chosen}


def record_outcome(cls: type, make: Any) -> Any:
    """``make()``, or the ParamError it raises; any other exception fails the test."""
    try:
        with no_hang():
            return make()
    except ParamError as ex:
        return ex


@_fuzz(200)
@given(case=record_kwargs())
@example(case=(FabricParams, {"cw": HUGE}))
@example(case=(BfpFormat, {"acc": -HUGE}))
@example(case=(MxParams, {"elem": "int8", "block": HUGE}))
@example(case=(GemmParams, {"sets": HUGE}))
@example(case=(SparseParams, {"p": -HUGE}))
@example(case=(HostParams, {"depth": HUGE}))
@example(case=(FabricParams, {"rows": HUGE}))
@example(case=(FabricParams, {"k": HUGE}))
@example(case=(GemmParams, {"pri_den": 3}))
def test_record_construction(case: tuple) -> None:
    """Any field values: a valid record (JSON round trip, derived properties answer) or a
    ParamError naming the class and a field given a value."""
    cls, kw = case
    out = record_outcome(cls, lambda: cls(**kw))
    if isinstance(out, ParamError):
        msg = str(out)
        assert cls.__name__ in msg, msg
        culprits = [f.name for f in dataclasses.fields(cls)
                    if f.name in kw and not same_as_default(cls, f, kw[f.name])]
        assert culprits, f"{cls.__name__}({kw}) refused although every value is the default: {msg}"
        assert names_field(msg, culprits), f"{msg!r} names none of {culprits}"
        return
    for k, v in kw.items():
        assert getattr(out, k) is v
    check_record(cls, out)


@_fuzz(200)
@given(cls=st.sampled_from(RECORDS), data=st.data())
def test_record_bad_single_field(cls: type, data: st.DataObject) -> None:
    """One field given a value no record accepts (a negative or huge int, a wrong type):
    a ParamError whose message is ``Class.field=...`` for that field."""
    f = data.draw(st.sampled_from(dataclasses.fields(cls)))
    kind = str(f.type)
    if kind == "bool":
        bad = st.one_of(st.integers(), st.none(), st.text(max_size=3), st.floats(), st.integers(0, 1).map(np.int64))
    elif kind == "str":
        bad = st.one_of(st.text(max_size=6).filter(lambda s: s not in STR_CHOICES[(cls, f.name)]), st.none(),
                        st.integers(), st.floats())
    else:
        bad = st.one_of(st.integers(max_value=-1), st.integers(min_value=2 ** 64), huge,
                        st.booleans(), st.floats(), st.text(max_size=3), st.just([1]))
        if "None" not in kind:
            bad = st.one_of(bad, st.none())
    v = data.draw(bad, label="value")
    kw = {"elem": "int8"} if cls is MxParams else {}
    kw[f.name] = v
    out = record_outcome(cls, lambda: cls(**kw))
    assert isinstance(out, ParamError), f"{cls.__name__}({f.name}={v!r}) accepted"
    assert f"{cls.__name__}.{f.name}=" in str(out), str(out)


@_fuzz(150)
@given(case=record_kwargs(), extra=st.dictionaries(st.one_of(st.text(max_size=6), st.integers(-5, 2 ** 70)),
                                                   st.integers(), max_size=2),
       drop=st.booleans())
@example(case=(MxParams, {"elem": "fp4_e2m1"}), extra={}, drop=True)
@example(case=(HostParams, {}), extra={1: 2, "zz": 3}, drop=False)
def test_record_from_dict(case: tuple, extra: dict, drop: bool) -> None:
    """``from_dict`` of any dict: the record the constructor makes, or a ParamError naming
    the unknown keys, the missing required field, or the bad field."""
    cls, kw = case
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = {k: v for k, v in extra.items() if k not in names}
    d = {**kw, **unknown}
    if drop and cls is MxParams:
        d.pop("elem")
    out = record_outcome(cls, lambda: cls.from_dict(d))
    if unknown:
        assert isinstance(out, ParamError), out
        assert all(repr(k) in str(out) for k in unknown), str(out)
        return
    if "elem" not in d and cls is MxParams:
        assert isinstance(out, ParamError) and "elem" in str(out), out
        return
    ref = record_outcome(cls, lambda: cls(**d))
    if isinstance(ref, ParamError):
        assert isinstance(out, ParamError) and str(out) == str(ref)
    else:
        assert out == ref
        check_record(cls, out)
