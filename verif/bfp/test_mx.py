"""cocotb test module for the OCP MX v1.0 quantizer (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.bfp.mx_env import MxTest


@pyuvm.test()
class MxRandom(MxTest):
    """Constrained-random corner-biased blocks (BFP and MX corners), idle cycles and back-pressure."""
