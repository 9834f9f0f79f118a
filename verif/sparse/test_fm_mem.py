"""cocotb test module for ``fm_mem_unit`` (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.sparse.mem_env import FmMemTest


@pyuvm.test()
class FmMemRandom(FmMemTest):
    """Clean, dense, empty and erroneous loads into both banks; ping-pong reads; p-wide read-back."""
