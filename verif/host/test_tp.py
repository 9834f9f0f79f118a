"""cocotb test module of host_top's throughput testbenches (started by
lockstep.verif.runner with the harness ``tp_host_top`` as top).

Started on the bare top instead (a per-edge build: ``tests/test_host_throughput.py``
does so to compare both modes), it runs the per-edge test and writes what it observed
(its completions and its final memory) to ``stream.json``. One module, one test, chosen
by the top: a harness is the only top whose name starts with ``tp_``.
"""

import cocotb
import pyuvm

from lockstep.verif.host.tp_env import EdgeStreamTest, HostTpTest

_TOP = getattr(cocotb, "top", None)

if _TOP is None or _TOP._name.startswith("tp_"):

    @pyuvm.test()
    class HostThroughput(HostTpTest):
        """Episodes through the harness: reset, set-up, memory load, the task stream,
        final reads and the read-back in HDL, checked in bulk."""

else:

    @pyuvm.test()
    class HostEdgeStream(EdgeStreamTest):
        """The per-edge test on the bare top, its completions and memory written to stream.json."""
