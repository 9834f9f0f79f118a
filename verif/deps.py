"""The import graph of the lockstep packages, read from the source text (nothing is imported).

Two uses:

* the build key of a generated design (:func:`lockstep.verif.runner.build_key`) hashes
  every source file its generator can execute: the closure of its imports, package
  ``__init__`` files included (:func:`closure`). A change to one family's record or
  generator rebuilds that family's designs and no other family's.
* ``tests/test_layout.py`` asserts that no import circle exists (:func:`cycles`) and that
  no family's generator reaches another family's code.

Every ``import`` statement counts, at module level or inside a function (a deferred
import is still a dependency); imports under ``if TYPE_CHECKING:`` do not, as they never
run.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
from pathlib import Path

__all__ = ["PACKAGES", "ImportGraph", "graph"]

#: Import name -> folder, as pyproject.toml maps them.
PACKAGES: dict[str, str] = {"lockstep.models": "models", "lockstep.gen": "gen", "lockstep.verif": "verif"}


def _module_files(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for name, folder in PACKAGES.items():
        for f in sorted((root / folder).rglob("*.py")):
            parts = f.relative_to(root / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((name, *parts))] = f
    return out


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST):
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _statements(text: str, filename: str) -> list[list]:
    """The import statements of one source text, unresolved: ``[level, module, names]``
    per statement (``level`` -1 for ``import a, b``, whose names are then the modules)."""
    out: list[list] = []
    for node in _import_nodes(ast.parse(text, filename=filename)):
        if isinstance(node, ast.Import):
            out.append([-1, "", [a.name for a in node.names]])
        else:
            out.append([node.level, node.module or "", [a.name for a in node.names]])
    return out


#: Where :class:`ImportGraph` keeps the statements it parsed, by the sha256 of the file's
#: text (so an entry can never go stale): parsing every source file took 2-4 s of each
#: simulation run's start, more than a small testbench's simulation.
CACHE = Path("build") / "deps-cache.json"


class ImportGraph:
    """The modules of :data:`PACKAGES` under ``root`` and the imports between them.

    Args:
        root: the repository folder (the one holding ``models/``, ``gen/``, ``verif/``).
        cache: a JSON file (relative to ``root``) of each source text's import statements,
            by content hash; None parses every file.
    """

    def __init__(self, root: Path, cache: Path | None = CACHE) -> None:
        self.root = Path(root)
        #: module name -> source file
        self.files = _module_files(self.root)
        cache_file = self.root / cache if cache is not None else None
        known: dict[str, list] = {}
        if cache_file is not None:
            try:
                known = json.loads(cache_file.read_text())
            except (OSError, ValueError):
                known = {}
        used: dict[str, list] = {}
        parsed = False
        #: module name -> the lockstep modules its import statements name
        self.edges: dict[str, set[str]] = {}
        for m, f in self.files.items():
            text = f.read_text()
            key = hashlib.sha256(text.encode()).hexdigest()
            if not isinstance(known.get(key), list):
                known[key] = _statements(text, str(f))
                parsed = True
            used[key] = known[key]
            self.edges[m] = self._resolve_all(m, f, used[key])
        if cache_file is not None and (parsed or len(used) != len(known)):
            try:  # written whole under another name and renamed: a reader sees one version
                cache_file.parent.mkdir(parents=True, exist_ok=True)
                tmp = cache_file.with_name(f"{cache_file.name}.{os.getpid()}")
                tmp.write_text(json.dumps(used))
                os.replace(tmp, cache_file)
            except OSError:
                pass

    def _resolve(self, name: str) -> str | None:
        """The module ``name`` is, or the innermost lockstep module that holds it."""
        while name and name not in self.files:
            name = name.rpartition(".")[0]
        return name or None

    def _resolve_all(self, module: str, path: Path, statements: list[list]) -> set[str]:
        pkg = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str] = set()
        for level, base, names in statements:
            if level < 0:
                targets = names
            else:
                if level:
                    up = pkg.split(".")
                    up = up[: len(up) - (level - 1)]
                    base = ".".join(up + ([base] if base else []))
                # `from pkg import name` names the submodule pkg.name when there is one
                targets = [f"{base}.{a}" if f"{base}.{a}" in self.files else base for a in names]
            found |= {r for t in targets if (r := self._resolve(t)) is not None and r != module}
        return found

    def parents(self, module: str) -> list[str]:
        """The packages whose ``__init__`` runs before ``module`` (outermost first)."""
        parts = module.split(".")
        return [p for i in range(1, len(parts)) if (p := ".".join(parts[:i])) in self.files]

    def closure(self, module: str) -> set[str]:
        """Every lockstep module that importing ``module`` executes, ``module`` included."""
        todo, seen = [module], set()
        while todo:
            m = todo.pop()
            if m in seen or m not in self.files:
                continue
            seen.add(m)
            todo.extend(self.edges[m])
            todo.extend(self.parents(m))
        return seen

    def cycles(self) -> list[list[str]]:
        """Import circles: strongly connected groups of two or more modules (Tarjan)."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on: set[str] = set()
        out: list[list[str]] = []

        def visit(v: str) -> None:
            index[v] = low[v] = len(index)
            stack.append(v)
            on.add(v)
            for w in sorted(self.edges[v]):
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    out.append(sorted(group))

        for v in sorted(self.files):
            if v not in index:
                visit(v)
        return out


@functools.lru_cache(maxsize=4)
def graph(root: Path) -> ImportGraph:
    """The import graph under ``root``, read once per process."""
    return ImportGraph(root)
