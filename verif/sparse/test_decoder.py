"""cocotb test module for ``sp_decoder`` (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.sparse.raster_env import DecoderTest


@pyuvm.test()
class DecoderRandom(DecoderTest):
    """Corner and random maps over densities 0..100%, refused starts, stalls, starts while busy."""
