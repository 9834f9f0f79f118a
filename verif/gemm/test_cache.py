"""cocotb test module for ``sa_cache`` (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.gemm.block_env import BlockTest
from lockstep.verif.gemm.cache_env import CacheUnit


@pyuvm.test()
class CacheBursts(BlockTest):
    """Lookup bursts of chosen locality against CacheSim: lk_hit and lk_evict per lookup,
    the per-kind counters and n_evict after each burst, clr, rst in the middle."""

    UNIT = CacheUnit
