"""cocotb test module for ``host_engine`` (started by lockstep.verif.runner); the
``scenario`` option picks the steps (verif/host/engine_env.py: tasks, bp, errors, two)."""

import pyuvm

from lockstep.verif.host.engine_env import EngineTest


@pyuvm.test()
class EngineSteps(EngineTest):
    """The scenario's steps against the golden models: results bit-exact, the rest of the
    memory unchanged, status, cpl_cycles against busy's edges and exec_cycles, DMA byte
    counters, test registers."""
