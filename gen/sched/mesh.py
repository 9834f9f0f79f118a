"""The mesh top of the ``sched`` family (docs/sched.md section 4.1): the ring's tiles,
bus, chip counter and taps, wired as a ``rows x cols`` torus.

* Tile ``t = r*cols + c``'s ``out[1]`` goes east to ``(r, (c+1) % cols)``'s ``in[0]``,
  its ``out[0]`` south to ``((r+1) % rows, c)``'s ``in[1]``, and its ``psum_out`` east to
  ``(r, (c+1) % cols)``'s ``psum_in``, each through ``hop_lat`` flip-flops (valid + data).
  The routing is ``FabricParams.link_dest`` / ``psum_dest``, the one the executor, the
  linter and the random-program planner read.
* Everything else (the bus, the chip counter, the load, debug and tap ports) is the
  ring's: :func:`sched_mesh` builds :func:`~lockstep.gen.sched.ring.sched_ring`, whose
  links follow the same functions, and has exactly its ports (:func:`ring_ports`), so
  the ring's testbench (verif/sched/env.py) drives either top.
"""

from __future__ import annotations

from pathlib import Path

from myhdl import block

from lockstep.models.record import ParamError
from lockstep.models.sched.params import FabricParams

from ..common import Emitted
from .parts import check_fabric
from .ring import emit_top, ring_ports, sched_ring

__all__ = ["emit_mesh", "mesh_ports", "sched_mesh"]

#: The mesh's ports are the ring's (docs/sched.md section 9).
mesh_ports = ring_ports


def _check_mesh(fmt: object, who: str) -> FabricParams:
    fmt = check_fabric(fmt, who)
    if fmt.rows < 2:
        raise ParamError(f"{who}: FabricParams.rows={fmt.rows} is the ring; a mesh needs rows >= 2 (emit_ring "
                         "builds the ring)")
    return fmt


@block
def sched_mesh(clk, rst, run, count, ld_we, ld_tile, ld_sel, ld_addr, ld_data,
               tile_count, issue, issue_entry, wr_en, wr_addr, wr_data, err, err_cnt, halted,
               out_valid, out_data, bus_valid, bus_data, bus_err, bus_err_cnt, dbg_tile, dbg_addr, dbg_rdata,
               fmt: FabricParams, psum_valid=None, psum_data=None, ext_valid=None, ext_data=None, susp=None,
               pad=None):
    """``rows x cols`` tiles on a torus mesh (out[1] east, out[0] south, psum_out east) with a
    shared bus and the chip counter. Ports: :func:`ring_ports`."""
    ports = dict(locals())  # every argument, handed on unchanged
    _check_mesh(fmt, "sched_mesh")
    return sched_ring(**ports)


def emit_mesh(fmt: FabricParams, outdir: Path | str, name: str = "sched_mesh") -> Emitted:
    """Write the mesh as ``<outdir>/<name>.v`` plus its JSON record (timing adds ``rows``
    and ``cols``; ``l_path_hops`` up to ``rows + cols - 2``, the longest east/south path).

    Raises:
        ParamError: ``fmt`` is not a :class:`FabricParams`, ``name`` is a keyword, or
            ``fmt.rows < 2`` (the ring: :func:`~lockstep.gen.sched.emit_ring`).
    """
    _check_mesh(fmt, name)
    return emit_top(sched_mesh, fmt, outdir, name, fmt.rows + fmt.cols - 2, {"rows": fmt.rows, "cols": fmt.cols},
                    f"{fmt.rows} x {fmt.cols} torus mesh of counter-timed tiles (out[1] east, out[0] south) with "
                    f"hop_lat={fmt.hop_lat} conveyor flip-flops per hop, a shared bus register and the chip counter; "
                    "no flow control")
