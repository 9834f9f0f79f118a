"""cocotb test module of every throughput testbench of a streaming unit (started by
lockstep.verif.runner); the unit is the testbench's ``unit`` option."""

import pyuvm

from lockstep.verif.throughput import TpTest


@pyuvm.test()
class Throughput(TpTest):
    """The unit's stimulus in chunks through its harness, checked in bulk."""
