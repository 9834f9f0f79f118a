"""cocotb test module: the patent's own numbers through the BFP quantizer."""

import pyuvm

from lockstep.verif.bfp.quantizer_env import QuantPatentTest


@pyuvm.test()
class QuantPatentVectors(QuantPatentTest):
    """Table 2 (exponents +3 / -3, wrap), 255 -> 0x7F80, 11.5 -> -11, Eq. 4 vectors."""
