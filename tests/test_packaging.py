"""pyproject.toml ships every package: a folder with an __init__.py under models/, gen/ or
verif/ missing from the packages list would be left out of a non-editable install."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed() -> None:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = set()
    for pkg, folder in cfg["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([pkg, *rel.parts]))
    assert found - listed == set(), f"pyproject.toml packages misses {sorted(found - listed)}"
    assert listed - found == set(), f"pyproject.toml lists packages with no folder: {sorted(listed - found)}"
