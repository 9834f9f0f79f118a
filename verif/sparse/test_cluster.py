"""cocotb test module for the sparse tensor compute cluster ``stc_cluster`` (started by
lockstep.verif.runner); the ``scenario`` option picks the passes (verif/sparse/cluster_jobs.py)."""

import pyuvm

from lockstep.verif.sparse.cluster_env import ClusterTest


@pyuvm.test()
class ClusterPasses(ClusterTest):
    """The scenario's passes against the golden model and numpy: each unit's output
    words, the combined map, cycles, routing and errors."""
