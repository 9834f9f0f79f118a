"""``python -m lockstep.gen [OUTDIR]``: write the default configurations (``make gen``).

Output is deterministic: the same parameters give byte-identical files, so CI can
regenerate ``hdl/`` and fail on any difference.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from .designs import DEFAULT_DESIGNS


def main(argv: list[str] | None = None) -> int:
    """Regenerate every default design into ``OUTDIR`` (default ``hdl/``)."""
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / "hdl"
    for family in {d.family for d in DEFAULT_DESIGNS}:
        shutil.rmtree(out / family, ignore_errors=True)  # no stale files survive
    for d in DEFAULT_DESIGNS:
        em = d.emit(out / d.family)
        print(f"gen: {em.verilog.relative_to(out.parent) if out.is_absolute() else em.verilog}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
