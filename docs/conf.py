"""Sphinx configuration of the lockstep documentation site (``make docs``).

The pages are the Markdown files of this folder (MyST), the contracts ``sched.md``,
``sparse.md``, ``gemm.md`` and ``host.md`` among them, and the API reference is generated
from the Google-style docstrings (autodoc + napoleon). Nothing is fetched from the
network (no intersphinx): the site builds offline, with warnings as errors.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective

project = "lockstep"
author = "the lockstep authors"
copyright = "the lockstep authors"  # noqa: A001 - Sphinx's name
release = "0.1.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
# Everything in docs/ that is not a page.
exclude_patterns = ["_build", "_static", "conf.py", "**/__pycache__", ".*"]

# MyST: GitHub-style anchors for headings down to ####, so links such as
# ``host.md#12-verification-and-the-measured-claims`` work both here and on GitHub.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# autodoc: re-exported names come from each package's ``__all__``; members in source order.
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autoclass_content = "class"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

# nitpicky (-n): every cross-reference must resolve. No intersphinx (the build is
# offline), so references to other projects' types are expected not to; so are the
# submodules a family package re-exports (their names are documented on the package).
nitpicky = True
nitpick_ignore_regex = [
    ("py:class", r"(numpy|collections\.abc|pathlib|typing|cocotb|pyuvm)\..*"),
    ("py:class", r"(SimHandleBase|Device)"),
    ("py:mod", r"lockstep\.models\.\w+\.(?!(mx|lib|pipe)$)\w+"),
    # the sched fabric's per-edge environment, which its throughput environment reuses, is
    # not part of the API reference (nor its private program item)
    ("py:(class|func|meth|mod)", r"lockstep\.verif\.sched\.env(\..*)?|SchedCoverage\..*"),
    ("py:class", r"lockstep\.verif\.sched\.tp_env\.ProgramItem"),
    # ... and the GEMM tile's (its jobs, per-edge checks and observation)
    ("py:(class|func|meth|mod)", r"(lockstep\.verif\.gemm\.)?(tile_env|jobs)(\..*)?|budget"),
    ("py:class", r"lockstep\.verif\.gemm\.tp_env\.Trace"),
    # ... and the host top's (its scenarios, driver and per-edge components)
    ("py:(class|func|meth|mod)", r"(lockstep\.verif\.host\.)?(jobs|driver)(\..*)?|"
                                 r"(lockstep\.verif\.host\.top_env\.)?(QueueScoreboard|CqMonitor|Submitter)"),
    ("py:class", r"np\..*"),
    # ... and the STU's (its jobs, the shared job environment, the methods StuUnit inherits)
    ("py:(class|func|meth|mod|attr)", r"(lockstep\.verif\.sparse\.)?(stu_jobs|job_env)(\..*)?|JobBfm|"
                                      r"(lockstep\.verif\.sparse\.stu_env\.)?StuUnit\..*"),
]

html_theme = "furo"
html_title = "lockstep"
html_static_path = ["_static"]
html_show_sourcelink = False
html_copy_source = False
# Fences without a language (console output, schedule programs) are shown as plain text.
highlight_language = "text"


def _skip_namedtuple_fields(app, what, name, obj, skip, options):  # noqa: ANN001, ARG001
    """NamedTuple fields are documented by the class's ``Attributes:`` section; the
    generated "Alias for field number N" properties would describe them a second time."""
    doc = getattr(obj, "__doc__", None) or ""
    if doc.startswith("Alias for field number"):  # a collections._tuplegetter
        return True
    return None


def _keep_prose_before_a_colon(app, what, name, obj, options, lines):  # noqa: ANN001, ARG001
    """napoleon reads an attribute's first line ``Storage cost: w + e / n bits`` as
    ``type: description`` (its inline-type convention). lockstep's docstrings never use
    that convention, so the words before the colon go back in front of the description."""
    if what not in ("attribute", "property", "data"):
        return
    for i, line in enumerate(lines):
        if line.startswith(":type: "):
            del lines[i]
            if i and not lines[i - 1].strip():
                del lines[i - 1]
            if lines:
                lines[0] = f"{line[len(':type: '):]}: {lines[0]}"
            return


def _attr_docs(module: ModuleType) -> dict[str, list[str]]:
    """The ``#:`` comments of a module's top-level assignments, by name."""
    try:
        docs = ModuleAnalyzer.for_module(module.__name__).find_attr_docs()
    except Exception:  # noqa: BLE001 - no source: no comments
        return {}
    return {name: list(lines) for (scope, name), lines in docs.items() if scope == ""}


class ModuleData(SphinxDirective):
    """``.. module-data:: package``: the constants a module lists in ``__all__`` that
    ``automodule`` leaves out because their ``#:`` comment is in the submodule that
    assigns them (a family package re-exports them) or because they have none.

    Each becomes a ``py:data`` entry of the module, with the comment of the module that
    assigns it and its value when the value is short.
    """

    required_arguments = 1
    MAX_VALUE = 100

    def run(self):  # noqa: ANN201
        name = self.arguments[0]
        module = importlib.import_module(name)
        own = _attr_docs(module)
        sources = [module]
        if hasattr(module, "__path__"):
            subs = pkgutil.iter_modules(module.__path__)
            sources += [importlib.import_module(f"{name}.{sub.name}") for sub in subs]
        found: dict[str, list[str]] = {}
        for source in sources:
            for attr, lines in _attr_docs(source).items():
                found.setdefault(attr, lines)
        notes = getattr(module, "__annotations__", {})
        lines = [".. rubric:: Constants", ""]
        for attr in module.__all__:
            obj = getattr(module, attr)
            if attr in own or inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj):
                continue  # automodule documents it
            lines += [f".. py:data:: {attr}", f"   :module: {name}"]
            if attr in notes:
                note = notes[attr]
                lines.append(f"   :type: {note if isinstance(note, str) else inspect.formatannotation(note)}")
            value = repr(obj)
            if len(value) <= self.MAX_VALUE and "\n" not in value:
                lines.append(f"   :value: {value}")
            lines.append("")
            lines += [f"   {line}" for line in found.get(attr, [])]
            lines.append("")
        if len(lines) == 2:
            return []
        return self.parse_text_to_nodes("\n".join(lines))


def setup(app):  # noqa: ANN001, ANN201
    app.connect("autodoc-skip-member", _skip_namedtuple_fields)
    app.connect("autodoc-process-docstring", _keep_prose_before_a_colon, priority=600)  # after napoleon (500)
    app.add_directive("module-data", ModuleData)
