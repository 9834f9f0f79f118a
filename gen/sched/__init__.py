"""MyHDL generators of the ``sched`` family: counter-timed tiles without flow control
(spec 000; the contract is docs/sched.md).

| block | module | generator |
|---|---|---|
| chip counter | ``sched_counter`` | :func:`emit_counter` |
| one tile | ``sched_tile`` | :func:`emit_tile` |
| ring of ``nt`` tiles + bus + chip counter | ``sched_ring`` | :func:`emit_ring` |
| ``rows x cols`` torus mesh of the same tiles | ``sched_mesh`` | :func:`emit_mesh` |

Every generator reads one :class:`~lockstep.models.sched.params.FabricParams` and writes
``<name>.v`` plus the ``<name>.json`` record (params, ports, timing).
"""

from .counter import counter_ports, emit_counter, sched_counter
from .mesh import emit_mesh, mesh_ports, sched_mesh
from .parts import OPCODES, PREFETCH_DEPTH
from .ring import emit_ring, ring_ports, sched_ring

from .tile import emit_tile, sched_tile, tile_ports, tile_timing

__all__ = [
    "OPCODES",
    "PREFETCH_DEPTH",
    "counter_ports",
    "emit_counter",
    "emit_mesh",
    "emit_ring",
    "emit_tile",
    "mesh_ports",
    "ring_ports",
    "sched_counter",
    "sched_mesh",
    "sched_ring",
    "sched_tile",
    "tile_ports",
    "tile_timing",
]
