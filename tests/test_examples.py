"""The Python examples under examples/ run and check themselves (README points to them)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").rglob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(path), run_name="__main__")   # each example asserts its own result
    assert capsys.readouterr().out.strip(), f"{path.name} printed nothing"


def test_examples_found() -> None:
    assert any(p.name == "host_flow.py" for p in EXAMPLES)
