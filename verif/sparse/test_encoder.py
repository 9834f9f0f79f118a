"""cocotb test module for ``sp_encoder`` (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.sparse.raster_env import EncoderTest


@pyuvm.test()
class EncoderRandom(EncoderTest):
    """Corner and random maps over densities 0..100%, refused starts, stalls, starts while busy."""
