"""cocotb test module for the BFP dot-product unit (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.bfp.dot_env import DotTest


@pyuvm.test()
class DotRandom(DotTest):
    """Corner-biased mantissas, exponents and bias alignments, idle cycles and back-pressure."""
