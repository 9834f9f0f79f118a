"""cocotb test module for the BFP -> float32 converter (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.bfp.tofloat_env import ToFloatTest


@pyuvm.test()
class ToFloatRandom(ToFloatTest):
    """Corner-biased blocks (overflow, subnormal, underflow, ties), idle cycles and back-pressure."""
