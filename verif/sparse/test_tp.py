"""cocotb test module of the STU's throughput testbenches (started by
lockstep.verif.runner with the harness ``tp_stu_top`` as top).

Started on the bare top instead (a per-edge build: ``tests/test_sparse_throughput.py``
does so to compare both modes), it runs the per-edge test with the harness's
back-pressure and writes what its monitor observed of every job to ``stream.json``. One
module, one test, chosen by the top: a harness is the only top whose name starts with
``tp_``.
"""

import cocotb
import pyuvm

from lockstep.verif.sparse.tp_env import EdgeStreamTest, StuTpTest

_TOP = getattr(cocotb, "top", None)

if _TOP is None or _TOP._name.startswith("tp_"):

    @pyuvm.test()
    class StuThroughput(StuTpTest):
        """Jobs through the harness: loaded, configured, started, run to done under HDL
        back-pressure, recorded, checked in bulk."""

else:

    @pyuvm.test()
    class StuEdgeStream(EdgeStreamTest):
        """The per-edge test on the bare top, its observations written to stream.json."""
