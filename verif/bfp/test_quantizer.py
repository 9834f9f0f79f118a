"""cocotb test module for the BFP quantizer (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.bfp.quantizer_env import QuantTest


@pyuvm.test()
class QuantRandom(QuantTest):
    """Constrained-random corner-biased blocks, idle cycles and back-pressure."""
