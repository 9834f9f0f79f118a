"""Mutants of a generated Verilog file: where a single-point bug can go, and the bug.

The generators write Verilog in one style (MyHDL's): one statement per line, every ``if``
with a ``begin``/``end`` block, declarations at the top of the module and of each
``always`` block. :func:`sites` reads that text line by line and lists every place a
one-line change can be made in the logic (never in a declaration, a sensitivity list, an
``initial`` block or a comment), of five kinds:

``op``
    a binary operator swapped: ``+``/``-``, ``<``/``<=``, ``>``/``>=``, ``==``/``!=``,
    ``&&``/``||``, ``&``/``|``, ``^`` to ``|``, ``<<``/``>>``, ``>>>`` to ``>>``, ``*`` to ``+``.
``const``
    an integer constant plus or minus one (a sized constant wraps within its width); a
    Boolean constant (MyHDL's ``(1 != 0)``) its other value.
``cond``
    the condition of an ``if`` inverted.
``stuck``
    one bit of an assigned variable stuck at 0 or 1 (a second assignment of that bit after
    the statement, or the constant itself for a one-bit target).
``drop``
    a procedural assignment removed.

The default assignments MyHDL writes at the top of a combinational block (``x = 8'h0;``
before the block's real statements) are left alone by ``const`` and ``drop``: every path
assigns those variables again, so such mutants are equivalent by construction. So is
every line of a dead store, a blocking assignment that a later statement of the same
level overwrites before anything reads it (a variable's initial value in a clocked block,
``pw = 64'h0;`` before ``pw = word;``), and every assignment to a sink the generators name
``*unused*`` (bits a block ignores on purpose; nothing reads them): no mutant is drawn there.

:func:`sample` picks ``n`` of them reproducibly from a seed, drawing the kinds in turn so
that each kind is represented; :func:`apply` writes one into the text. A mutant keeps the
line count, so its line number and its one-line diff (:attr:`Mutant.diff`) read against the
original file.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["KINDS", "Mutant", "sites", "sample", "apply", "local_pair", "literal_value", "sized_literal",
           "concat_parts"]

#: The mutation kinds, in the order :func:`sample` draws them.
KINDS = ("op", "const", "cond", "stuck", "drop")

#: Binary operator -> its mutant.
SWAPS = {
    "+": "-", "-": "+", "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
    "&&": "||", "||": "&&", "&": "|", "|": "&", "^": "|", "<<": ">>", ">>": "<<", ">>>": ">>", "*": "+",
}

_TOKEN = re.compile(
    r"(?P<lit>\d+'[sS]?[bBoOdDhH][0-9a-fA-F_]+|\d+)"
    r"|(?P<id>[A-Za-z_$][A-Za-z0-9_$]*)"
    r"|(?P<op>>>>|<<<|===|!==|<<|>>|<=|>=|==|!=|&&|\|\||\+:|-:|~&|~\||~\^|\^~|[-+*/%&|^<>!~?:])"
    r"|(?P<open>[(\[{])|(?P<close>[)\]}])|(?P<other>\S)"
)
#: A declaration; ``indent`` is empty at module level (a block's own are indented).
_DECL = re.compile(r"^(?P<indent>\s*)(?P<kind>input|output|inout|reg|wire)\b(?P<signed>\s+signed)?\s*"
                   r"(?:\[(?P<range>[^\]]+)\])?\s*(?P<name>[A-Za-z_][\w$]*)\s*(?P<mem>\[[^\]]*\])?\s*;")
#: A module-level constant (MyHDL writes a constant signal as one).
_LOCALPARAM = re.compile(r"^localparam\b[^=]*?(?P<name>[A-Za-z_][\w$]*)\s*=[^;]*;")
_SKIP_START = re.compile(r"^\s*(?://|`|module\b|endmodule\b|input\b|output\b|inout\b|reg\b|wire\b|integer\b|"
                         r"localparam\b|parameter\b|begin\b|end\b|else\s+begin\b|endcase\b|default\b|case\b|\$)")
_ASSIGN = re.compile(r"^(\s*)(assign\s+)?([A-Za-z_][\w$]*(?:\[[^\]]*\])?)\s*(<=|=)\s*(.*);\s*$")
_IF = re.compile(r"^(\s*(?:else\s+)?if\s*\()(.*)(\)\s*begin\s*)$")
_BOOL = re.compile(r"\(([01]) != 0\)")
_LITERAL_VALUE = re.compile(r"(\d+)'([sS]?)([bBoOdDhH])([0-9a-fA-F_]+)$")


@dataclass(frozen=True)
class Mutant:
    """One single-point change of a Verilog text.

    Attributes:
        kind: one of :data:`KINDS`.
        line: 1-based line number in the original text.
        col: 0-based column of the changed token (-1 for a whole-statement change).
        before: the original line (without its newline).
        after: the mutated line.
        desc: what changed, in words (``">= -> >"``, ``"out_q[3] stuck at 1"``).
    """

    kind: str
    line: int
    col: int
    before: str
    after: str
    desc: str

    @property
    def diff(self) -> str:
        """The one-line diff: ``L<line>: <before> => <after>`` (whitespace trimmed)."""
        return f"L{self.line}: {self.before.strip()}  =>  {self.after.strip()}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "diff": self.diff}


def _width(expr: str | None) -> int | None:
    """The width of a ``[hi:lo]`` range of constant integer arithmetic (None: not one)."""
    if expr is None:
        return 1
    hi, sep, lo = expr.partition(":")
    if not sep or not re.fullmatch(r"[\d\s+\-*()]+", hi + lo):
        return None
    try:
        return abs(int(eval(hi, {"__builtins__": {}})) - int(eval(lo, {"__builtins__": {}}))) + 1  # digits only
    except (SyntaxError, ValueError, ZeroDivisionError):
        return None


def literal_value(tok: str) -> int | None:
    """The value of an unsigned integer literal (``12``, ``8'h0c``); None for anything else."""
    if tok.isdigit():
        return int(tok)
    m = _LITERAL_VALUE.fullmatch(tok)
    if m is None or m[2]:
        return None
    try:
        return int(m[4].replace("_", ""), {"b": 2, "o": 8, "d": 10, "h": 16}[m[3].lower()])
    except ValueError:  # x or z digits
        return None


def sized_literal(tok: str) -> tuple[int, int] | None:
    """``(width, value)`` of an unsigned sized literal (``8'h0c``); None for anything else."""
    m = _LITERAL_VALUE.fullmatch(tok)
    v = literal_value(tok) if m else None
    return (int(m[1]), v) if m and v is not None else None


def concat_parts(text: str) -> list[str] | None:
    """The top-level parts of a concatenation (``{8'h0, a[3:0], b}``), or None when
    ``text`` is not one concatenation (``{a, b} + {c, d}`` is not)."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    parts, depth, cur = [], 0, ""
    for ch in text[1:-1]:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += (ch in "({[") - (ch in ")}]")
        if depth < 0:   # the first brace closed before the end: more than one expression
            return None
        cur += ch
    return parts + [cur.strip()]


def _fixed_bits(rhs: str, width: int | None) -> dict[int, int]:
    """The bits a concatenation's leading sized constant fixes (``{24'h0, y}`` in a 32-bit
    target: bits 31..8 are 0), position -> value; ``{}`` for anything else."""
    parts = concat_parts(rhs)
    lead = sized_literal(parts[0]) if parts and len(parts) > 1 and width else None
    if lead is None:
        return {}
    n, v = lead
    return {width - n + i: (v >> i) & 1 for i in range(n)}


def _literal_mutants(tok: str) -> list[tuple[str, str]]:
    """(new literal, description) for an integer literal: value +1 and -1, in its width."""
    m = _LITERAL_VALUE.match(tok)
    if m is None:  # a plain decimal
        v = int(tok)
        return [(str(v + 1), f"{tok} -> {v + 1}")] + ([(str(v - 1), f"{tok} -> {v - 1}")] if v > 0 else [])
    width, sign, base, digits = int(m[1]), m[2], m[3], m[4].replace("_", "")
    radix = {"b": 2, "o": 8, "d": 10, "h": 16}[base.lower()]
    try:
        v = int(digits, radix)
    except ValueError:
        return []
    out = []
    for nv in sorted({(v + 1) % (1 << width), (v - 1) % (1 << width)} - {v}):
        text = {2: f"{nv:b}", 8: f"{nv:o}", 10: f"{nv}", 16: f"{nv:x}"}[radix]
        out.append((f"{width}'{sign}{base}{text}", f"{tok} -> {width}'{sign}{base}{text}"))
    return out


def _expr_mutants(expr: str, offset: int) -> list[tuple[str, int, str, str, str]]:
    """(kind, column, old token, new token, description) for each operator and literal of
    ``expr`` outside ``[...]`` selects (a select's bounds set widths, not logic)."""
    out = []
    # MyHDL writes a Boolean constant as (1 != 0) / (0 != 0): its one mutant is the other
    # truth value (1 -> 2 or the 0 on the right would only be equivalent mutants)
    bools = []  # their spans: no other mutant inside
    for b in _BOOL.finditer(expr):
        flip = "0" if b[1] == "1" else "1"
        out.append(("const", offset + b.start(1), b[1], flip, f"({b[1]} != 0) -> ({flip} != 0)"))
        bools.append(b.span())
    depth = 0
    prev = None  # the previous significant token's group (a Boolean's last is its ")")
    for m in _TOKEN.finditer(expr):
        group, tok = m.lastgroup, m.group()
        if any(a <= m.start() < z for a, z in bools):
            prev = group
            continue
        if tok == "[":
            depth += 1
        elif tok == "]":
            depth -= 1
        elif depth == 0 and group == "lit":
            for new, desc in _literal_mutants(tok):
                out.append(("const", offset + m.start(), tok, new, desc))
        elif depth == 0 and group == "op" and tok in SWAPS and prev in ("lit", "id", "close"):
            out.append(("op", offset + m.start(), tok, SWAPS[tok], f"{tok} -> {SWAPS[tok]}"))
        prev = group
    return out


def sites(text: str) -> list[Mutant]:
    """Every mutant of :data:`KINDS` the Verilog ``text`` admits, in line order."""
    lines = text.split("\n")
    widths: dict[str, int | None] = {}  # the nearest preceding declaration of each name
    words: dict[str, int | None] = {}   # the memories among them: the width of a word
    out: list[Mutant] = []
    in_initial = False
    preamble = False  # in the default assignments at the top of an always block
    for i, line in enumerate(lines):
        s = line.strip()
        d = _DECL.match(line)
        if d:
            widths[d["name"]] = None if d["mem"] else _width(d["range"])
            if d["mem"]:
                words[d["name"]] = _width(d["range"])
            else:
                words.pop(d["name"], None)
            continue
        if s.startswith("initial"):
            in_initial = True
            continue
        if s.startswith("always"):
            in_initial, preamble = False, True
            continue
        if in_initial or not s or _SKIP_START.match(line):
            continue

        def add(kind: str, col: int, after: str, desc: str) -> None:
            if after != line:
                out.append(Mutant(kind, i + 1, col, line, after, desc))

        a = _ASSIGN.match(line)
        if a and (_dead_store(lines, i, a) or "unused" in a[3]):
            continue   # a value nothing reads (a dead store, or a sink named *unused*)
        if a:
            indent, cont, lhs, op, rhs = a.groups()
            is_default = preamble and not cont and op == "=" and (
                _TOKEN.fullmatch(rhs) is not None and rhs[0].isdigit() or rhs in ("(0 != 0)", "(1 != 0)"))
            if not is_default:
                preamble = False
            rhs_col = line.index(rhs, len(indent) + len(cont or "") + len(lhs))
            for kind, col, old, new, desc in _expr_mutants(rhs, rhs_col):
                if kind == "const" and is_default:
                    continue
                add(kind, col, line[:col] + new + line[col + len(old):], desc)
            name = lhs.split("[")[0]
            if name in words:  # a memory word: its bits are the word's
                w, target = words[name], lhs
            else:
                w = widths.get(name) if "[" not in lhs else (1 if ":" not in lhs and "+:" not in lhs else None)
                target = name
            # a constant right-hand side already holds its bits: sticking one at the value
            # it has is the same statement (an equivalent mutant by construction)
            value = {"(0 != 0)": 0, "(1 != 0)": 1}.get(rhs, literal_value(rhs))
            fixed = _fixed_bits(rhs, w) if value is None else {}   # {24'h0, y}: the top 24 bits
            if w == 1:
                for bit in (0, 1):
                    if value is None or value & 1 != bit:
                        add("stuck", -1, f"{indent}{cont or ''}{lhs} {op} 1'b{bit};", f"{lhs} stuck at {bit}")
            elif w and not cont:
                bit = (i * 7919) % w  # one bit per statement, spread over the word
                for v in (0, 1):
                    if (value is None or (value >> bit) & 1 != v) and fixed.get(bit) != v:
                        add("stuck", -1, f"{line.rstrip()} {target}[{bit}] {op} 1'b{v};", f"{target}[{bit}] stuck at {v}")
            if not cont and not is_default:
                add("drop", -1, f"{indent}// mutant: dropped {s}", f"dropped '{s}'")
            continue
        preamble = False
        c = _IF.match(line)
        if c:
            head, cond, tail = c.groups()
            add("cond", -1, f"{head}!({cond}){tail}", f"if ({cond}) inverted")
            for kind, col, old, new, desc in _expr_mutants(cond, len(head)):
                add(kind, col, line[:col] + new + line[col + len(old):], desc)
    return out


def _dead_store(lines: list[str], i: int, a: re.Match) -> bool:
    """Is line ``i`` (matched by ``_ASSIGN``) a blocking assignment to a whole variable that
    a later statement of the same block level assigns again, with no read in between?
    (MyHDL writes a variable's initial value where the block starts -- ``pw = 64'h0;``
    followed, lines later, by ``pw = word;``.) Any mutant of such a line is equivalent by
    construction: its value is never read."""
    indent, cont, lhs, op, _rhs = a.groups()
    if cont or op != "=" or "[" in lhs:
        return False
    word = re.compile(rf"(?<![\w$]){re.escape(lhs)}(?![\w$])")
    for nxt in lines[i + 1:]:
        s = nxt.strip()
        if not s or s.startswith("//"):
            continue
        ind = len(nxt) - len(nxt.lstrip())
        if ind < len(indent):
            return False   # the level ends first: the value may be read after it
        if not word.search(nxt):
            continue
        b = _ASSIGN.match(nxt)
        return bool(b and ind == len(indent) and b[3] == lhs and b[4] == "=" and not word.search(b[5]))
    return False


def sample(text: str, n: int, seed: int) -> list[Mutant]:
    """``n`` distinct mutants of ``text`` (fewer when it has fewer sites), drawn with
    ``random.Random(seed)``: the kinds in turn (:data:`KINDS`), a random site of that kind
    each time. The same text, ``n`` and seed give the same list."""
    rng = random.Random(seed)
    pools = {k: [m for m in sites(text) if m.kind == k] for k in KINDS}
    for pool in pools.values():
        rng.shuffle(pool)
    picked: list[Mutant] = []
    while len(picked) < n and any(pools.values()):
        for k in KINDS:
            if pools[k] and len(picked) < n:
                picked.append(pools[k].pop())
    return picked


def apply(text: str, m: Mutant) -> str:
    """``text`` with mutant ``m`` written in (its line replaced).

    Raises:
        ValueError: ``text`` is not the text ``m`` was drawn from (its line differs).
    """
    lines = text.split("\n")
    if not 0 < m.line <= len(lines) or lines[m.line - 1] != m.before:
        raise ValueError(f"mutant of line {m.line} does not fit this text (the line differs: regenerated?)")
    lines[m.line - 1] = m.after
    return "\n".join(lines)


# ---- the mutated block alone -------------------------------------------------------------
_KEYWORDS = frozenset(
    "always assign begin end if else case casez casex endcase default for while integer reg wire posedge "
    "negedge or and not signed unsigned input output module endmodule initial".split())


def _block_span(lines: list[str], line: int) -> tuple[int, int] | None:
    """0-based ``(first, last)`` lines of the ``always`` block or ``assign`` holding
    1-based ``line``; None if it is in neither."""
    i = line - 1
    if lines[i].startswith("assign "):
        return i, i
    start = next((j for j in range(i, -1, -1) if lines[j].startswith(("always", "initial", "module", "assign "))),
                 None)
    if start is None or not lines[start].startswith("always"):
        return None
    end = next((j for j in range(start + 1, len(lines)) if lines[j].rstrip() == "end"), None)
    return (start, end) if end is not None and end >= i else None


def _names(block: list[str]) -> tuple[set[str], set[str], set[str]]:
    """(identifiers used, assigned, declared inside) of a block's lines."""
    used, assigned, local = set(), set(), set()
    for text in block:
        s = text.strip()
        label = re.search(r"\bbegin\s*:\s*([A-Za-z_][\w$]*)", s)
        if re.match(r"(reg|integer)\b", s):
            local.update(re.findall(r"([A-Za-z_][\w$]*)\s*(?:\[[^\]]*\])?\s*;", s))
            continue
        for stmt in s.split(";"):
            a = _ASSIGN.match(_CASE_LABEL.sub("", stmt.strip()) + ";")
            if a:
                assigned.add(a[3].split("[")[0])
        for m in _TOKEN.finditer(re.sub(r"//.*", "", s)):
            if m.lastgroup == "id" and not m.group().startswith("$") and m.group() not in _KEYWORDS:
                used.add(m.group())
        if label:
            used.discard(label[1])
    return used - local, assigned - local, local


#: A case item's label in front of its statement (``2'b01: x = 3;``, ``default: x = 0;``).
_CASE_LABEL = re.compile(r"^(?:default|\d+'[sS]?[bBoOdDhH][0-9a-fA-F_xXzZ]+|\d+|[A-Za-z_][\w$]*)\s*:\s*(?!begin\b)")


def local_pair(original: str, mutated: str, line: int, top: str = "local", grow: int = 0,
               max_lines: int = 600, drivers: bool = False) -> tuple[str, str] | None:
    """The block of ``line`` (an ``always`` block or an ``assign``) cut out of each text as
    module ``top``: every signal it reads an input (free: any value, any time), every
    signal it assigns that the rest of the design reads or that is a port an output.

    Whatever the rest of the design does, it sees the block only through those outputs: if
    the two modules are equivalent for all inputs, so are the two designs (the converse
    does not hold). Both modules have the same ports. None when the block is not
    self-contained: it writes a memory (an unpacked array) that another block reads, reads
    a memory at an address made of its own variables, or reads a name with no module-level
    declaration, or ``line`` lies in no block.

    ``grow`` > 0 takes in, that many times, every block that reads what the cut assigns
    (as long as the cut stays within ``max_lines``): a difference the block makes that
    its readers drop (a truncation, a mask, a mux that never selects it) then proves
    equivalent on the cut too. None also when growing adds no block (the same cut again).

    ``drivers`` then takes in the ``assign`` statements that drive what the cut reads
    (one level): a value its driver fixes (a zero-extension's top bits, say) is no
    longer free, so a mutation that forces it to what it always is proves equivalent
    (stu_top@421f m013: bit 5 of a six-bit ``{1'h0, n}``, stuck at 0). None when no such
    ``assign`` exists (the same cut again).
    """
    lines, mlines = original.split("\n"), mutated.split("\n")
    if len(lines) != len(mlines) or not 0 < line <= len(lines):
        return None
    span = _block_span(lines, line)
    if span is None:
        return None
    decls: dict[str, tuple[str, str, str]] = {}   # name -> (signed, range, memory dimensions)
    ports_out: set[str] = set()
    decl_lines: set[int] = set()
    params: dict[str, str] = {}   # localparam name -> its declaration (copied: a constant, not an input)
    for j, text in enumerate(lines):
        lp = _LOCALPARAM.match(text)
        if lp:
            params[lp["name"]] = text.strip()
            decl_lines.add(j)
        d = _DECL.match(text)
        if d and not d["indent"]:
            decl_lines.add(j)
            kind, signed, name, mem = d["kind"], d["signed"], d["name"], d["mem"]
            rng = f"[{d['range']}]" if d["range"] else ""
            if kind == "output":
                ports_out.add(name)
            if kind in ("input", "output") and name in decls:
                continue
            prev = decls.get(name)
            decls[name] = (signed or (prev[0] if prev else ""), rng or (prev[1] if prev else ""), mem or "")

    head_end = next((j for j, t in enumerate(lines) if t.startswith("module")), 0)
    head_end = next((j for j in range(head_end, len(lines)) if lines[j].rstrip().endswith(");")), head_end)
    spans = [span]
    for _ in range(grow):   # (the module header's port list is no reader)
        more = _readers(lines, spans, decl_lines | set(range(head_end + 1)))
        if not more or sum(b - a + 1 for a, b in spans + more) > max_lines:
            return None
        spans = sorted(spans + more)
    if drivers:
        more = _drivers(lines, spans, decl_lines)
        if not more or sum(b - a + 1 for a, b in spans + more) > max_lines:
            return None
        spans = sorted(spans + more)
    inside = {j for a, b in spans for j in range(a, b + 1)}
    outside = {m.group() for j, text in enumerate(lines) if j not in inside and j not in decl_lines
               for m in _TOKEN.finditer(text) if m.lastgroup == "id"}
    gold = [t for a, b in spans for t in lines[a:b + 1]]
    gate = [t for a, b in spans for t in mlines[a:b + 1]]
    wires = {n for a, b in spans if not lines[a].startswith("always") for n in _names(lines[a:b + 1])[1]}
    _, asg_gold, local_gold = _names(gold)
    _, asg_gate, local_gate = _names(gate)
    assigned = asg_gold | asg_gate   # replacing reads below assigns nothing new
    # A memory the block only reads: each distinct read ``mem[address]`` becomes an input
    # of its own (any value: more behaviours than the real memory, so still sound; the
    # mutants never change an address, so both blocks read the same expressions). An
    # address made of the block's own variables (a loop index) names many words: no cut.
    reads: dict[str, str] = {}
    for mem in sorted(n for n, d in decls.items() if d[2] and n not in assigned):
        g, m = (_replace_reads(b, mem, reads, local_gold | local_gate) for b in (gold, gate))
        if g is None or m is None:
            return None
        gold, gate = g, m
    used = _names(gold)[0] | _names(gate)[0]
    consts = sorted(n for n in used if n in params and n not in decls)
    used -= set(consts)
    read_inputs = set(reads.values())
    if any(n not in decls and n not in read_inputs for n in used):
        return None
    if any(decls[n][2] and n in outside for n in assigned if n in decls):
        return None  # a memory written here and read elsewhere: no port can carry it
    outputs = sorted(n for n in assigned if (n in outside or n in ports_out))
    inputs = sorted((used - assigned) | {"clk", "rst"})
    internal = sorted(assigned - set(outputs))
    mem_elem = {v: decls[k.split("[", 1)[0]] for k, v in reads.items()}

    def module(block: list[str]) -> str:
        def decl(kind: str, n: str) -> str:
            signed, rng, mem = mem_elem.get(n) or decls.get(n, ("", "", ""))
            dims = f" {mem}" if mem and n not in mem_elem else ""
            return f"{kind}{signed} {rng + ' ' if rng else ''}{n}{dims};"

        head = [f"module {top} ({', '.join(inputs + outputs)});"]
        head += [params[n] for n in consts]
        head += [decl("input", n) for n in inputs]
        for n in outputs:
            head += [decl("output", n), decl("wire" if n in wires else "reg", n)]
        head += [decl("wire" if n in wires else "reg", n) for n in internal]
        return "\n".join(head + block + ["endmodule", ""])

    return module(gold), module(gate)


def _cut_names(lines: list[str], spans: list[tuple[int, int]]) -> tuple[set[int], set[str], set[str]]:
    """(0-based lines inside ``spans``, names their blocks read, names they assign)."""
    inside = {j for a, b in spans for j in range(a, b + 1)}
    used: set[str] = set()
    assigned: set[str] = set()
    for a, b in spans:
        u, s, _ = _names(lines[a:b + 1])
        used, assigned = used | u, assigned | s
    return inside, used, assigned


def _readers(lines: list[str], spans: list[tuple[int, int]], decl_lines: set[int]) -> list[tuple[int, int]]:
    """The blocks (``always`` or ``assign`` spans) outside ``spans`` that read a name the
    blocks of ``spans`` assign; ``[]`` when a reader is no block (the cut cannot grow)."""
    inside, _, assigned = _cut_names(lines, spans)
    found: set[tuple[int, int]] = set()
    for j, text in enumerate(lines):
        if j in inside or j in decl_lines or not assigned & {m.group() for m in _TOKEN.finditer(text)
                                                               if m.lastgroup == "id"}:
            continue
        sp = _block_span(lines, j + 1)
        if sp is None:
            return []
        found.add(sp)
    return sorted(found)


def _drivers(lines: list[str], spans: list[tuple[int, int]], decl_lines: set[int]) -> list[tuple[int, int]]:
    """The ``assign`` statements outside ``spans`` that assign a name the blocks of
    ``spans`` read and do not assign themselves."""
    inside, used, assigned = _cut_names(lines, spans)
    want = used - assigned
    found: set[tuple[int, int]] = set()
    for j, text in enumerate(lines):
        if j in inside or j in decl_lines or not text.startswith("assign "):
            continue
        sp = _block_span(lines, j + 1)
        if sp is not None and _names(lines[sp[0]:sp[1] + 1])[1] & want:
            found.add(sp)
    return sorted(found)


def _replace_reads(block: list[str], mem: str, reads: dict[str, str], local: set[str]) -> list[str] | None:
    """``block`` with every ``mem[...]`` replaced by the input name ``reads`` gives that
    read's text (a new ``_lockstep_rd<k>`` for a new one). None when an address reads one
    of the block's own variables ``local``."""
    out = []
    pat = re.compile(rf"(?<![\w$]){re.escape(mem)}\s*\[")
    for text in block:
        while (m := pat.search(text)) is not None:
            depth, j = 0, m.end() - 1
            for j in range(m.end() - 1, len(text)):
                depth += {"[": 1, "]": -1}.get(text[j], 0)
                if depth == 0:
                    break
            key = re.sub(r"\s+", "", text[m.start():j + 1])
            if any(t.group() in local for t in _TOKEN.finditer(key[len(mem):]) if t.lastgroup == "id"):
                return None
            name = reads.setdefault(key, f"_lockstep_rd{len(reads)}")
            text = text[:m.start()] + name + text[j + 1:]
        out.append(text)
    return out
