"""Functional coverage: a thin, data-driven layer over cocotb-coverage.

cocotb-coverage declares cover points as decorators fixed at import time; bins here
depend on the DUT's parameters, so :class:`Covergroup` builds the decorated sampling
function at run time from ``point(name, xf, bins)`` calls. The database is the global
``cocotb_coverage.coverage.coverage_db``, exported per test to YAML (merged across a
regression by the report scripts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from cocotb_coverage.coverage import CoverPoint, coverage_db

__all__ = ["Covergroup"]


class Covergroup:
    """A named set of cover points sampled together with one transaction.

    Args:
        name: dotted group name (``"bfp.quantizer"``); points are ``<name>.<point>``.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.points: list[str] = []
        self._sample: Callable[[Any], None] = lambda t: None

    def point(self, name: str, xf: Callable[[Any], Any], bins: list[Any]) -> None:
        """Add a cover point.

        Args:
            name: point name inside the group.
            xf: maps a sampled transaction to a bin value.
            bins: the bins (each must be hit at least once).
        """
        full = f"{self.name}.{name}"
        self.points.append(full)
        self._sample = CoverPoint(full, xf=xf, bins=list(bins))(self._sample)

    def sample(self, txn: Any) -> None:
        """Sample every point with one transaction."""
        self._sample(txn)

    def summary(self) -> dict[str, Any]:
        """Coverage figures: per point (hits per bin) and the group percentage."""
        group = coverage_db[self.name]
        points = {}
        for full in self.points:
            item = coverage_db[full]
            points[full] = {str(k): int(v) for k, v in item.detailed_coverage.items()}
        return {
            "functional_coverage": round(float(group.cover_percentage), 2),
            "cover_points": points,
            "holes": sorted(f"{p}={b}" for p, bins in points.items() for b, h in bins.items() if h == 0),
        }

    def export(self, folder: Path) -> Path:
        """Write the whole coverage database to ``<folder>/coverage.yml``."""
        path = Path(folder) / "coverage.yml"
        coverage_db.export_to_yaml(str(path))
        return path
