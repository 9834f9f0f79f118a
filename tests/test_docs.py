"""The documentation: the Sphinx site (``make docs``) builds with warnings as errors and
every internal link of it resolves; the README stays a short front page whose links
resolve; and every Python example of the README and of the site's pages runs and checks
its own result."""

from __future__ import annotations

import fcntl
import importlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"
README_MAX_CHARS = 8000


# ---- building ------------------------------------------------------------------------

def sphinx_build(src: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``make docs``'s build: warnings are errors, every warning reported."""
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
           "-d", str(out / ".doctrees"), str(src), str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600)


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """The site and its build's result (``rc``, ``log``). Built once per session: under
    pytest-xdist the first worker builds under a file lock in the session's shared
    temporary folder and the others reuse it. ``--keep-going`` writes every page even when
    the build warns, so the link checks still run."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    out, done = root / "docs-site", root / "docs-site.json"
    with open(root / "docs-site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            r = sphinx_build(DOCS, out)
            done.write_text(json.dumps({"rc": r.returncode, "log": r.stdout + r.stderr}))
    return out, json.loads(done.read_text())


@pytest.fixture(scope="module")
def site(build: tuple[Path, dict[str, object]]) -> Path:
    return build[0]


# ---- HTML links ----------------------------------------------------------------------

class _Page(HTMLParser):
    """The ids of one page and the links it makes (href and img src)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])  # type: ignore[arg-type]
        for key in ("href", "src") if tag in ("img", "script") else ("href",):
            if a.get(key) is not None:
                self.links.append(a[key])  # type: ignore[arg-type]


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def broken_links(html_root: Path) -> list[str]:
    """Every relative link of every page under ``html_root`` whose file does not exist or
    whose ``#anchor`` is not an id of the target page."""
    pages = {p: _parse(p) for p in sorted(html_root.rglob("*.html"))}
    problems = []
    for page, parsed in pages.items():
        for link in parsed.links:
            url = urlsplit(link)
            if url.scheme or url.netloc or link.startswith("/"):
                continue  # external (none is fetched) or absolute
            target = (page.parent / unquote(url.path)).resolve() if url.path else page
            if target.is_dir():
                target = target / "index.html"
            where = f"{page.relative_to(html_root)}: {link}"
            if not target.is_file():
                problems.append(f"{where}: no file {target}")
            elif url.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(url.fragment) not in ids:
                    problems.append(f"{where}: no anchor #{url.fragment} in {target.name}")
    return problems


def test_site_builds_without_warnings(build: tuple[Path, dict[str, object]]) -> None:
    site, result = build
    assert result["rc"] == 0 and "WARNING" not in str(result["log"]) and "ERROR" not in str(result["log"]), (
        f"the docs build warned (make docs shows the same):\n{result['log']}")
    assert (site / "index.html").is_file()
    for page in ("getting-started", "bfp", "sched", "sparse", "gemm", "host", "reuse", "regressions",
                 "reports", "api/models-bfp"):
        assert (site / f"{page}.html").is_file(), f"{page} is not in the site"


def test_internal_links_resolve(site: Path) -> None:
    assert broken_links(site) == []


#: API page -> the modules it documents (docs/api/*.rst).
API_PAGES = {
    "models-bfp": ["lockstep.models.bfp", "lockstep.models.bfp.mx"],
    "models-sched": ["lockstep.models.sched"],
    "models-sparse": ["lockstep.models.sparse"],
    "models-gemm": ["lockstep.models.gemm"],
    "models-host": ["lockstep.models.host", "lockstep.models.host.lib", "lockstep.models.host.pipe"],
    "models-record": ["lockstep.models.record"],
    "verif-run": ["lockstep.verif.registry", "lockstep.verif.runner", "lockstep.verif.context"],
    "verif-env": ["lockstep.verif.seq", "lockstep.verif.coverage", "lockstep.verif.agents.stream",
                  "lockstep.verif.agents.timed", "lockstep.verif.packing", "lockstep.verif.columns", "lockstep.verif.throughput",
                  "lockstep.verif.twin", "lockstep.verif.raw", "lockstep.verif.stream_env", "lockstep.gen.harness",
                  "lockstep.gen.sched.harness", "lockstep.verif.sched.tp_env", "lockstep.verif.sched.raw",
                  "lockstep.gen.gemm.harness", "lockstep.verif.gemm.tp_env", "lockstep.verif.gemm.raw",
                  "lockstep.gen.sparse.harness", "lockstep.verif.sparse.tp_env", "lockstep.verif.sparse.raw",
                  "lockstep.verif.sparse.stu_env", "lockstep.gen.host.harness", "lockstep.verif.host.tp_env", "lockstep.verif.host.raw",
                  "lockstep.verif.host.top_env", "lockstep.verif.episodes"],
    "verif-testplan": ["lockstep.verif.testplan"],
}
#: Names a submodule's page leaves to its package's (documented there once).
DOCUMENTED_ON_THE_PACKAGE = {"lockstep.models.bfp.mx": {"mx_quantize", "mx_dequantize"}}


@pytest.mark.parametrize("page", sorted(API_PAGES))
def test_api_pages_document_every_public_name(site: Path, page: str) -> None:
    """Every name of each module's ``__all__`` has an entry: a family package's re-exports
    (autodoc follows ``__all__``) and its constants (``module-data`` in docs/conf.py)."""
    ids = _parse(site / "api" / f"{page}.html").ids
    missing = [f"{module}.{name}" for module in API_PAGES[page]
               for name in importlib.import_module(module).__all__
               if name not in DOCUMENTED_ON_THE_PACKAGE.get(module, ()) and f"{module}.{name}" not in ids]
    assert missing == []


def test_link_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text('<a id="top" href="sub/a.html#here">a</a> <a href="missing.html">m</a>'
                                         '<img src="pic.png"> <a href="#top">t</a> <a href="https://x.org/">x</a>')
    (tmp_path / "sub" / "a.html").write_text('<h1 id="there">a</h1><a href="../index.html#nowhere">back</a>')
    assert broken_links(tmp_path) == [
        f"index.html: sub/a.html#here: no anchor #here in a.html",
        f"index.html: missing.html: no file {tmp_path / 'missing.html'}",
        f"index.html: pic.png: no file {tmp_path / 'pic.png'}",
        "sub/a.html: ../index.html#nowhere: no anchor #nowhere in index.html",
    ]


def test_a_warning_fails_the_build(tmp_path: Path) -> None:
    """The build the site test runs refuses a page with a warning (a broken reference)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text('extensions = ["myst_parser"]\n')
    (src / "index.md").write_text("# Title\n\nSee [nothing](nothing.md).\n")
    r = sphinx_build(src, tmp_path / "out")
    assert r.returncode != 0 and "nothing.md" in r.stdout + r.stderr


# ---- the README ----------------------------------------------------------------------

_MD_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _github_slugs(markdown: str) -> set[str]:
    """Heading anchors as GitHub (and MyST's ``myst_heading_anchors``) make them."""
    slugs, text = set(), re.sub(r"^```.*?^```", "", markdown, flags=re.M | re.S)
    for title in re.findall(r"^#{1,6}\s+(.*?)\s*$", text, flags=re.M):
        slugs.add(re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-"))
    return slugs


def test_readme_is_a_short_front_page() -> None:
    n = len(README.read_text(encoding="utf-8"))
    assert n <= README_MAX_CHARS, f"README.md has {n} characters (at most {README_MAX_CHARS}); move detail to docs/"


def test_readme_links_resolve() -> None:
    links = _MD_LINK.findall(README.read_text(encoding="utf-8"))
    assert links, "the README links into the site"
    problems = []
    for link in links:
        url = urlsplit(link)
        if url.scheme or url.netloc:
            continue
        target = (REPO / unquote(url.path)).resolve() if url.path else README
        if not target.exists():
            problems.append(f"{link}: no {target}")
        elif target.suffix == ".md" and url.fragment and url.fragment not in _github_slugs(target.read_text()):
            problems.append(f"{link}: no heading #{url.fragment} in {target.name}")
    assert problems == []


# ---- the examples --------------------------------------------------------------------

def _python_blocks() -> Iterator[tuple[str, str]]:
    for path in [README, *sorted(DOCS.glob("*.md"))]:
        lines = path.read_text(encoding="utf-8").splitlines()
        start = None
        for i, line in enumerate(lines):
            if start is None and line.strip() == "```python":
                start = i + 1
            elif start is not None and line.strip() == "```":
                yield f"{path.relative_to(REPO)}:{start}", "\n".join(lines[start:i]) + "\n"
                start = None


BLOCKS = list(_python_blocks())


def test_the_reuse_page_and_the_readme_have_examples() -> None:
    files = {name.split(":")[0] for name, _ in BLOCKS}
    assert {"README.md", "docs/reuse.md"} <= files


@pytest.mark.parametrize("name,code", BLOCKS, ids=[name for name, _ in BLOCKS])
def test_python_example_runs(name: str, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ```python block is self-contained, checks its own result and runs from the
    repository's root (paths such as examples/sched/ring_demo.s are relative to it)."""
    assert re.search(r"^\s*assert\b", code, flags=re.M), f"{name}: the example checks nothing"
    monkeypatch.chdir(REPO)
    exec(compile(code, name, "exec"), {"__name__": "__example__"})  # noqa: S102 - our own docs
