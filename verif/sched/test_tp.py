"""cocotb test module of the schedule-driven fabric's throughput testbenches (started by
lockstep.verif.runner with the harness ``tp_sched_ring`` / ``tp_sched_mesh`` as top).

Started on the bare fabric instead (a per-edge build: ``tests/test_sched_throughput.py``
does so to compare both modes), it runs the per-edge test and writes the trace its
monitor rebuilt to ``trace.json``. One module, one test, chosen by the top: a harness is
the only top whose name starts with ``tp_``.
"""

import cocotb
import pyuvm

from lockstep.verif.sched.tp_env import EdgeTraceTest, SchedTpTest

_TOP = getattr(cocotb, "top", None)

if _TOP is None or _TOP._name.startswith("tp_"):

    @pyuvm.test()
    class SchedThroughput(SchedTpTest):
        """Programs through the harness: loaded, run to halt, recorded, checked in bulk."""

else:

    @pyuvm.test()
    class SchedEdgeTrace(EdgeTraceTest):
        """The per-edge test on the bare fabric, its recorded trace written to trace.json."""
