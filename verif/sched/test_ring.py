"""cocotb test module for the counter-timed ring ``sched_ring`` and the mesh ``sched_mesh``
(the same ports; started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.sched.env import SchedTest


@pyuvm.test()
class SchedProgram(SchedTest):
    """Load the program named by the ``program`` option, run it, compare the whole trace."""
