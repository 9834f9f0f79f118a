"""cocotb test module for the statistics-mode exponent unit ``bfp_stats``."""

import pyuvm

from lockstep.verif.bfp.renorm_env import StatsTest


@pyuvm.test()
class StatsRandom(StatsTest):
    """Constant-e3 segments, outliers, e3 restarts, idle cycles and back-pressure."""
