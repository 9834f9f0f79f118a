"""cocotb test module of the host library on ``host_top`` (started by
lockstep.verif.runner); the ``mode`` option picks serial, lock-step or stream."""

import pyuvm

from lockstep.verif.host.pipe_env import HostPipeTest


@pyuvm.test()
class HostPipeline(HostPipeTest):
    """Tasks through the library: exactly once, in order, bit-exact, weights once."""
