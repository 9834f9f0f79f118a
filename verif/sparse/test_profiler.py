"""cocotb test module for ``nnz_profiler`` (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.sparse.raster_env import ProfilerTest


@pyuvm.test()
class ProfilerRandom(ProfilerTest):
    """Corner and random maps over densities 0..100%, refused starts, stalls, starts while busy."""
