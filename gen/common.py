"""Shared generator machinery: MyHDL conversion, determinism, sidecar JSON, guards.

Every generator module builds a MyHDL ``@block`` and hands it to :func:`emit`, which

* refuses names that are Verilog/SystemVerilog keywords (MyHDL only checks VHDL's),
* converts to Verilog in a scratch folder and strips MyHDL's date line, so the same
  parameters always give byte-identical files,
* writes ``<name>.v`` and a ``<name>.json`` record of the parameters, ports and timing
  beside it (the Gemmini-style header that models and testbenches can read).
"""

from __future__ import annotations

import __future__
import ast
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import myhdl._always
import myhdl._always_comb
import myhdl._always_seq
import myhdl._block
import myhdl._instance
import myhdl._simulator
import myhdl._util
import myhdl.conversion._analyze
import myhdl.conversion._toVerilog
from myhdl import ConcatSignal, ResetSignal, Signal, always, always_comb, always_seq, block, concat, intbv
from myhdl._Signal import Constant

from lockstep.models.record import ParamError, clog2, params_hash

__all__ = [
    "lane",
    "SV_KEYWORDS",
    "block_named",
    "generate_if",
    "Emitted",
    "ParamError",
    "check_name",
    "emit",
    "emit_stream_unit",
    "flat_signal",
    "cat_lanes",
    "lane_bus",
    "mem_read",
    "split_low",
    "port_signals",
    "resize",
    "new_bool",
    "new_vec",
    "const0",
    "wire",
    "bit_of",
    "flop",
    "ring_fifo",
]

# IEEE 1800-2017 Annex B keywords that are legal Python identifiers; a MyHDL block or
# signal with one of these names converts, then breaks `iverilog -g2012`.
SV_KEYWORDS = frozenset(
    """accept_on alias always always_comb always_ff always_latch and assert assign assume
    automatic before begin bind bins binsof bit break buf bufif0 bufif1 byte case casex casez
    cell chandle checker class clocking cmos config const constraint context continue cover
    covergroup coverpoint cross deassign default defparam design disable dist do edge else end
    endcase endchecker endclass endclocking endconfig endfunction endgenerate endgroup
    endinterface endmodule endpackage endprimitive endprogram endproperty endspecify
    endsequence endtable endtask enum event eventually expect export extends extern final
    first_match for force foreach forever fork forkjoin function generate genvar global
    highz0 highz1 if iff ifnone ignore_bins illegal_bins implements implies import incdir
    include initial inout input inside instance int integer interconnect interface intersect
    join join_any join_none large let liblist library local localparam logic longint
    macromodule matches medium modport module nand negedge nettype new nexttime nmos nor
    noshowcancelled not notif0 notif1 null or output package packed parameter pmos posedge
    primitive priority program property protected pull0 pull1 pulldown pullup
    pulsestyle_ondetect pulsestyle_onevent pure rand randc randcase randsequence rcmos real
    realtime ref reg reject_on release repeat restrict return rnmos rpmos rtran rtranif0
    rtranif1 s_always s_eventually s_nexttime s_until s_until_with scalared sequence shortint
    shortreal showcancelled signed small soft solve specify specparam static string strong
    strong0 strong1 struct super supply0 supply1 sync_accept_on sync_reject_on table tagged
    task this throughout time timeprecision timeunit tran tranif0 tranif1 tri tri0 tri1
    triand trior trireg type typedef union unique unique0 unsigned until until_with untyped
    use uwire var vectored virtual void wait wait_order wand weak weak0 weak1 while wildcard
    wire with within wor xnor xor""".split()
)

def _fast_call_info() -> Any:
    """Drop-in for ``myhdl._block._getCallInfo`` without ``inspect.stack()``.

    MyHDL 0.11 calls ``inspect.stack()`` on every block instantiation; that reads the
    source of every frame and scans ``sys.modules`` each time, so a 32-lane design built
    of recursive trees took minutes inside pytest. This walks the same frames directly:
    0 this function, 1 ``_Block.__init__``, 2 the decorator call, 3 the function that
    defines instances, 4 its caller (one further for a list comprehension's scope).
    ``tests/test_gen.py`` checks the output is byte-identical to stock MyHDL's.
    """
    frames = []
    f = sys._getframe(0)
    while f is not None and len(frames) < 6:
        frames.append(f)
        f = f.f_back
    func = frames[3]
    caller = frames[4] if len(frames) > 4 else None
    if func.f_code.co_name == "<listcomp>":
        func = frames[4]
        caller = frames[5] if len(frames) > 5 else None
    symdict = dict(func.f_globals)
    symdict.update(func.f_locals)
    modctxt = caller is not None and isinstance(caller.f_locals.get("self"), myhdl._block._Block)
    return myhdl._block._CallInfo(func.f_code.co_name, modctxt, symdict)


def _fast_instance_call_info() -> Any:
    """Drop-in for ``myhdl._instance._getCallInfo`` (used by ``@always_comb``,
    ``@always_seq``, ``@always`` and ``@instance``), which calls ``inspect.stack()``
    twice per generator. Frames: 0 this function, 1 the decorator, 2 the block function
    that defines the generator, 3 its caller."""
    f2 = sys._getframe(2)
    f3 = f2.f_back
    if f3 is None:
        raise IndexError("list index out of range")  # what stock MyHDL raises here
    symdict = dict(f2.f_globals)
    symdict.update(f2.f_locals)
    modctxt = isinstance(f3.f_locals.get("self"), myhdl._block._Block)
    return myhdl._instance._CallInfo(f2.f_code.co_name, modctxt, symdict)


#: Source facts of each generator function's code, as ``myhdl._util._makeAST`` works
#: them out: (dedented source, compile flags, source file, line offset).
_AST_SOURCE: dict[types.CodeType, tuple[str, int, str | None, int]] = {}
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


def _cached_make_ast(func: Callable) -> ast.Module:
    """Drop-in for ``myhdl._util._makeAST`` that reads and tokenizes each function's
    source once per process instead of once per generator instance.

    MyHDL parses the source of every ``@always_comb`` / ``@always_seq`` generator each
    time a block is instantiated (and once more when conversion re-elaborates the design):
    ``inspect.getsource`` and the dedent both run Python's tokenizer over the function,
    and a cluster of STU units has over ten thousand generator instances of a few hundred
    functions. The source of one code object never changes, so it is looked up once; the
    tree is still compiled afresh on every call (callers annotate and rewrite it).
    ``tests/test_gen.py`` checks the output is byte-identical to stock MyHDL's.
    """
    if hasattr(func, "__wrapped__"):  # inspect.getsource follows it: not keyed by func's own code
        return _stock_make_ast(func)
    code = func.__code__
    facts = _AST_SOURCE.get(code)
    if facts is None:
        src = myhdl._util._dedent(inspect.getsource(func))
        facts = (src, ast.PyCF_ONLY_AST | (code.co_flags & _FUTURE_FLAGS), inspect.getsourcefile(func),
                 inspect.getsourcelines(func)[1] - 1)
        _AST_SOURCE[code] = facts
    src, flags, sourcefile, lineoffset = facts
    tree = compile(src, filename="<unknown>", mode="exec", flags=flags, dont_inherit=True)
    tree.sourcefile = sourcefile
    tree.lineoffset = lineoffset
    return tree


_stock_make_ast = myhdl._util._makeAST
#: ``LOCKSTEP_MYHDL_STOCK_CALLINFO=1`` keeps stock MyHDL's caller lookup and source parsing
#: (tests/test_gen.py compares the two).
_STOCK = os.environ.get("LOCKSTEP_MYHDL_STOCK_CALLINFO") == "1"
_make_ast = _stock_make_ast if _STOCK else _cached_make_ast

if not _STOCK:
    myhdl._block._getCallInfo = _fast_call_info
    for _mod in (myhdl._instance, myhdl._always, myhdl._always_comb, myhdl._always_seq):
        _mod._getCallInfo = _fast_instance_call_info
    myhdl.conversion._analyze._makeAST = _cached_make_ast

#: Attribute :func:`generate_if` puts on a generator function: the closure names it decides.
_GENERATE_IF = "_lockstep_generate_if"


def generate_if(*names: str) -> Callable[[Callable], Callable]:
    """Decide ``if NAME:`` and ``NAME and ...`` / ``NAME or ...`` on Python booleans of the
    block (closure variables ``names``) when a MyHDL generator is built, as Verilog's
    ``generate if`` does: one generator body serves every configuration and the converted
    code has the chosen branch only. Put it under ``@always_comb`` / ``@always_seq`` /
    ``@always``; the Python body runs unchanged in a MyHDL simulation (same decisions).

    Folded: a name in ``names``, ``not`` of a decided value, ``and`` / ``or`` terms (a decided
    term drops out or decides the whole), ``if`` / ``elif`` on a decided test (the statement
    becomes its body or its ``else``). Every other expression is left as written.
    """

    def mark(func: Callable) -> Callable:
        setattr(func, _GENERATE_IF, names)
        return func

    return mark


class _Fold(ast.NodeTransformer):
    """:func:`generate_if`'s rewrite of a generator's AST (``flags``: name -> bool)."""

    def __init__(self, flags: dict[str, bool]) -> None:
        self.flags = flags

    def decided(self, node: ast.AST) -> bool | None:
        if isinstance(node, ast.Name) and node.id in self.flags:
            return self.flags[node.id]
        return getattr(node, "_decided", None)

    @staticmethod
    def const(value: bool, where: ast.AST) -> ast.Constant:
        node = ast.copy_location(ast.Constant(value=value), where)
        node._decided = value
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        d = self.decided(node.operand) if isinstance(node.op, ast.Not) else None
        return node if d is None else self.const(not d, node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        neutral = isinstance(node.op, ast.And)  # True drops out of an and, False out of an or
        keep = []
        for v in node.values:
            d = self.decided(v)
            if d is None:
                keep.append(v)
            elif d != neutral:
                return self.const(d, node)
        if not keep:
            return self.const(neutral, node)
        if len(keep) == 1:
            return keep[0]
        node.values = keep
        return node

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        self.generic_visit(node)
        d = self.decided(node.test)
        if d is None:
            if not node.body:
                raise ValueError(f"generate_if: an if at line {node.lineno} keeps an empty body")
            return node
        return node.body if d else node.orelse

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self.generic_visit(node)
        node.decorator_list = [  # drop @generate_if(...) itself: the tree is what it would be without
            d for d in node.decorator_list
            if not (isinstance(d, ast.Call) and getattr(d.func, "id", getattr(d.func, "attr", "")) == "generate_if")
        ]
        return node


def _generate_ast(func: Callable) -> ast.AST:
    """``myhdl._util._makeAST`` plus :func:`generate_if`'s folding (MyHDL takes every
    generator's AST, for analysis and conversion alike, through ``myhdl._instance``)."""
    tree = _make_ast(func)
    names = getattr(func, _GENERATE_IF, None)
    if names:
        cells = dict(zip(func.__code__.co_freevars, func.__closure__ or ()))
        missing = [n for n in names if n not in cells]
        if missing:
            raise ValueError(f"generate_if: {func.__name__} does not use {missing}")
        _Fold({n: bool(cells[n].cell_contents) for n in names}).visit(tree)
    return tree


myhdl._instance._makeAST = _generate_ast


def block_named(blk: Any, name: str) -> Any:
    """The ``@block`` function ``blk`` once more, under ``name``: MyHDL names a block's
    instances (and so their Verilog identifiers) after the function, so one body can keep
    two names that generated code already has."""
    f = blk.func
    g = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    g.__kwdefaults__, g.__doc__, g.__qualname__ = f.__kwdefaults__, f.__doc__, name
    return block(g)


_DATE_LINE = re.compile(r"^// Date: .*\n", re.MULTILINE)
_FILE_LINE = re.compile(r"^// File: .*\n", re.MULTILINE)
_IDENT = re.compile(r"\b(?:reg|wire|input|output|inout)\s+(?:signed\s+)?(?:\[[^\]]*\]\s*)?(\w+)")
_BLOCK_LABEL = re.compile(r"begin:\s*(\w+)")


def _reset_block_calls() -> None:
    """The end of ``myhdl._block._Block._clear`` without its re-elaboration."""
    for b in myhdl._simulator._blocks:
        b.calls = 0


def check_name(name: str) -> str:
    """Refuse a module/signal name that is a Verilog or SystemVerilog keyword.

    Args:
        name: identifier to check.

    Returns:
        The name, unchanged.

    Raises:
        ParamError: when ``name`` is a keyword (MyHDL issue: only VHDL words are checked).
    """
    if name.lower() in SV_KEYWORDS:
        raise ParamError(f"name {name!r} is a (System)Verilog keyword; pick another")
    return name


def flat_signal(width: int) -> Signal:
    """A fresh unsigned ``width``-bit signal (never ``[Signal()] * n``, which aliases)."""
    return Signal(intbv(0)[width:])


@dataclass
class Emitted:
    """What :func:`emit` wrote.

    Attributes:
        verilog: path of the ``.v`` file.
        sidecar: path of the ``.json`` record.
        record: the sidecar's content.
    """

    verilog: Path
    sidecar: Path
    record: dict[str, Any] = field(default_factory=dict)


def _reset_values(inst: Any, memlist: Any = ()) -> dict[str, int]:
    """The registers the design's ``always_seq`` blocks reset, by their Verilog names, and
    the value ``rst`` gives each (the signal's initial value, as MyHDL resets it). Read
    from the MyHDL design while the converter has its names, never from the Verilog text:
    a testbench holds the RTL's state after reset to it. A word of a memory (a list of
    signals; ``memlist``, the converter's) is ``name[i]``."""
    words = {id(s): f"{m.name}[{i}]" for m in memlist for i, s in enumerate(m.mem) if m.name}
    out: dict[str, int] = {}

    def walk(b: Any) -> None:
        for sub in getattr(b, "subs", ()):
            if isinstance(sub, myhdl._always_seq._AlwaysSeq):
                if sub.reset is not None and sub.reset._name == "rst":   # the top's rst port
                    for sig in sub.sigregs:
                        if name := sig._name or words.get(id(sig)):
                            out[name] = int(sig._init) & ((1 << len(sig)) - 1)
            else:
                walk(sub)

    walk(inst)
    return dict(sorted(out.items()))


def emit(
    make_block: Callable[[], Any],
    name: str,
    outdir: Path | str,
    *,
    family: str,
    params: Any,
    ports: dict[str, Any],
    timing: dict[str, Any],
    doc: str,
) -> Emitted:
    """Convert a MyHDL block to deterministic Verilog plus a JSON sidecar.

    Args:
        make_block: zero-argument callable returning the top ``@block`` instance.
        name: Verilog module and file name (keyword-checked).
        outdir: folder to write ``<name>.v`` and ``<name>.json`` into (created).
        family: block family (``"bfp"``, ...).
        params: the family's frozen parameter dataclass.
        ports: port name -> {"dir", "width", "doc"} (recorded, and checked against the
            converted module's port list).
        timing: latency/throughput facts the testbench asserts (e.g. ``{"latency": 1}``).
        doc: one-paragraph description put in the file header.

    Returns:
        The :class:`Emitted` paths and record.

    Raises:
        ParamError: on a keyword name or when the converted ports differ from ``ports``.
    """
    check_name(name)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lockstep-gen-") as tmp:
        # MyHDL remembers every instance name it has handed out in a process-global set
        # and suffixes "_0" on reuse, so a second conversion in one process would differ
        # from the first. Forget them: each conversion is a fresh design.
        myhdl._block._name_set.clear()
        inst = make_block()
        if not _STOCK:
            # Block.convert() first elaborates the whole design a second time (MyHDL's
            # _clear, "for the side effect on signal attributes" of a design converted or
            # simulated before) and throws that copy away; this design was elaborated just
            # now and never used, so only the call counters are reset, as _clear ends.
            inst._clear = _reset_block_calls
        with warnings.catch_warnings():
            # Signals named *unused* are sinks for bits a block ignores on purpose.
            warnings.filterwarnings("ignore", message=r"Signal is driven but not read: .*unused")
            resets: dict[str, int] = {}
            # the converter's hook after it has named every signal (and before it forgets them)
            conv = myhdl.conversion._toVerilog._ToVerilogConvertor
            hook = conv._convert_filter
            conv._convert_filter = lambda _self, _h, _intf, _sigs, mems, _gens: resets.update(_reset_values(inst, mems))
            try:
                inst.convert(hdl="Verilog", name=name, path=tmp, testbench=False, timescale="1ns/1ps")
            finally:
                conv._convert_filter = hook
        text = (Path(tmp) / f"{name}.v").read_text()
    text = _DATE_LINE.sub("", _FILE_LINE.sub("", text))

    for ident in set(_IDENT.findall(text)) | set(_BLOCK_LABEL.findall(text)):
        check_name(ident)
    declared = re.search(rf"module {name} \(([^)]*)\);", text)
    got = [p.strip() for p in declared.group(1).split(",")] if declared else []
    if sorted(got) != sorted(ports):
        raise ParamError(f"{name}: converted ports {got} differ from the declared {list(ports)}")
    regs = set(re.findall(r"^reg\s+(?:signed\s+)?(?:\[[^\]]+\]\s*)?(\w+)\s*(?:\[[^\]]+\]\s*)?;", text, re.M))
    record = {
        "module": name,
        "family": family,
        "params_type": type(params).__name__,
        "params": params.to_dict(),
        "params_hash": params_hash(params),
        "ports": ports,
        "timing": timing,
        "doc": doc,
        "resets": {n: v for n, v in resets.items() if n.split("[")[0] in regs},
    }
    header = (
        f"// {name}: {doc}\n"
        f"// Generated by lockstep.gen ({family}); do not edit. Parameters ({type(params).__name__},"
        f" hash {record['params_hash']}):\n"
        f"//   {json.dumps(params.to_dict(), sort_keys=True)}\n"
    )
    v_path = outdir / f"{name}.v"
    j_path = outdir / f"{name}.json"
    v_path.write_text(header + text.lstrip("\n").rstrip() + "\n")
    j_path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return Emitted(v_path, j_path, record)


def port_signals(ports: dict[str, dict]) -> dict[str, Signal]:
    """Fresh MyHDL signals for a port list (``rst`` becomes a synchronous active-high
    reset, 1-bit ports ``bool`` signals, wider ones unsigned vectors)."""
    sigs: dict[str, Signal] = {}
    for pname, p in ports.items():
        if pname == "rst":
            sigs[pname] = ResetSignal(0, active=1, isasync=False)
        elif p["width"] == 1:
            sigs[pname] = Signal(bool(0))
        else:
            sigs[pname] = flat_signal(p["width"])
    return sigs


def port(d: str, w: int, doc: str) -> dict:
    """One port record of a ``*_ports`` list: direction, width and a line of doc."""
    return {"dir": d, "width": w, "doc": doc}


def check_record(params: Any, params_type: type, who: str) -> Any:
    """Refuse anything but a ``params_type`` record (the message names both types)."""
    if not isinstance(params, params_type):
        raise ParamError(f"{who}: params must be a {params_type.__name__}, got {type(params).__name__}")
    return params


def emit_stream_unit(
    top: Callable[..., Any],
    params: Any,
    params_type: type,
    ports_of: Callable[[Any], dict[str, dict]],
    outdir: Path | str,
    name: str,
    *,
    family: str,
    timing: dict[str, Any],
    doc: str,
) -> Emitted:
    """Type-check ``params``, build ``top(**ports_of(params), fmt=params)``, :func:`emit` it.

    Raises:
        ParamError: when ``params`` is not a ``params_type``.
    """
    check_record(params, params_type, name)
    if os.environ.get("PYTHONHASHSEED") != "0":
        # MyHDL orders sensitivity lists and reset assignments by iterating sets of
        # names, which follows Python's per-process string hashing. Convert in a child
        # with a fixed hash seed so every caller gets the same bytes.
        spec = {
            "top": _qualname(top.func),
            "params_type": _qualname(params_type),
            "params": params.to_dict(),
            "ports_of": _qualname(ports_of),
            "outdir": str(Path(outdir).resolve()),
            "name": name,
            "family": family,
            "timing": timing,
            "doc": doc,
        }
        subprocess.run(
            [sys.executable, "-m", "lockstep.gen.common", json.dumps(spec)],
            env={**os.environ, "PYTHONHASHSEED": "0"},
            check=True,
        )
        out = Path(outdir)
        return Emitted(out / f"{name}.v", out / f"{name}.json", json.loads((out / f"{name}.json").read_text()))
    ports = ports_of(params)
    return emit(
        lambda: top(**port_signals(ports), fmt=params),
        name,
        outdir,
        family=family,
        params=params,
        ports=ports,
        timing=timing,
        doc=doc,
    )


def _qualname(obj: Any) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _resolve(qual: str) -> Any:
    mod, _, attr = qual.partition(":")
    out = importlib.import_module(mod)
    for part in attr.split("."):
        out = getattr(out, part)
    return out


@block
def lane(bus, lo, width, out):
    """``out = bus[lo +: width]`` as a real signal (shadow slices cannot be indexed inside
    generators); shared by every family's lane-split logic."""

    @always_comb
    def split():
        out.next = bus[lo + width : lo]

    return split


def lane_bus(sigs: list) -> Signal:
    """The signals as one bus, ``sigs[0]`` in the low bits (one signal: itself)."""
    return ConcatSignal(*reversed(sigs)) if len(sigs) > 1 else sigs[0]


@block
def cat_lanes(sigs, y):
    """``y = {sigs[n-1], .., sigs[0]}`` (lane 0 in the low bits), resized to ``len(y)``."""
    return resize(lane_bus(sigs), y)


@block
def split_low(src, lo, hi_unused):
    """``lo = src[len(lo):]``; the high bits of ``src`` go to ``hi_unused`` (not needed)."""
    n = len(lo)

    @always_comb
    def sp():
        lo.next = src[n:]
        hi_unused.next = src[len(src):n]

    return sp


@block
def mem_read(mem, addr, q):
    """Combinational read port ``q = mem[addr]`` of a register array (a list of Signals)."""

    @always_comb
    def rd():
        q.next = mem[addr]

    return rd


@block
def resize(src, dst):
    """``dst = src`` zero-extended or truncated to ``len(dst)`` (explicit concat/slice).

    Ports:
        src: input (bool or vector).
        dst: output vector.
    """
    ws, wd = len(src), len(dst)
    if wd > ws:
        k = wd - ws

        @always_comb
        def zext():
            dst.next = concat(intbv(0)[k:], src)

        return zext
    if wd == ws:

        @always_comb
        def same():
            dst.next = src

        return same

    @always_comb
    def trunc():
        dst.next = src[wd:]

    return trunc


def new_bool() -> Signal:
    """A fresh 1-bit signal."""
    return Signal(bool(0))


def new_vec(width: int) -> Signal:
    """A fresh unsigned vector signal."""
    return Signal(intbv(0)[width:])


def const0(width: int) -> Constant:
    """A constant 0 of ``width`` bits (converted to a localparam): a signal this instance
    never drives, e.g. the communication-interface outputs of the other tiles."""
    return Constant(bool(0)) if width == 1 else Constant(intbv(0)[width:])


@block
def wire(a, y):
    """``y = a``: a connection the flattened design needs as a real signal."""

    @always_comb
    def connect():
        y.next = a

    return connect


@block
def bit_of(bus, i, out):
    """``out = bus[i]`` (a bool signal)."""

    @always_comb
    def pick():
        out.next = bus[i]

    return pick


@block
def flop(clk, rst, vi, di, vo, do_):
    """One conveyor flip-flop: ``(vo, do_) <= (vi, di)`` (reset to 0)."""

    @always_seq(clk.posedge, reset=rst)
    def stage():
        vo.next = vi
        do_.next = di

    return stage


@block
def ring_fifo(clk, rst, push, pop, din, head, occ, depth: int):
    """A ``depth``-word FIFO in a circular buffer: ``head`` is the oldest word
    (combinational), ``occ`` the occupancy (the caller's width); ``pop`` drops the head
    and ``push`` writes ``din`` at the end of the cycle. The caller keeps both legal."""
    pw_ = max(1, clog2(depth))
    last_slot = depth - 1
    rp, wp = new_vec(pw_), new_vec(pw_)
    fifo = [Signal(intbv(0)[len(din):]) for _ in range(depth)]

    @always_comb
    def fifo_read():
        head.next = fifo[rp]

    @always_seq(clk.posedge, reset=rst)
    def regs():
        if pop:
            if rp == last_slot:
                rp.next = 0
            else:
                rp.next = rp + 1
        if push:
            if wp == last_slot:
                wp.next = 0
            else:
                wp.next = wp + 1
        if push and not pop:
            occ.next = occ + 1
        elif pop and not push:
            occ.next = occ - 1

    @always(clk.posedge)
    def fifo_write():
        if push:
            fifo[wp].next = din

    return fifo_read, regs, fifo_write



if __name__ == "__main__":  # the fixed-hash-seed child of emit_stream_unit
    _spec = json.loads(sys.argv[1])
    _ptype = _resolve(_spec["params_type"])
    emit_stream_unit(
        _resolve(_spec["top"]),
        _ptype.from_dict(_spec["params"]),
        _ptype,
        _resolve(_spec["ports_of"]),
        _spec["outdir"],
        _spec["name"],
        family=_spec["family"],
        timing=_spec["timing"],
        doc=_spec["doc"],
    )
