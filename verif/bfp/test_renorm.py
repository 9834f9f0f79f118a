"""cocotb test module for the BFP renormaliser ``bfp_renorm`` (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.bfp.renorm_env import RenormTest


@pyuvm.test()
class RenormRandom(RenormTest):
    """Corner-biased accumulator vectors, max and fixed mode, idle cycles, back-pressure."""
