"""cocotb test module for ``w_mem`` (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.sparse.mem_env import WMemTest


@pyuvm.test()
class WMemRandom(WMemTest):
    """Weight streams in every order and error class, abandoned jobs, FC writes and gathers."""
