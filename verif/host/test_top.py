"""cocotb test module of ``host_top`` (started by lockstep.verif.runner); the ``scenario``
option picks the steps (verif/host/jobs.py)."""

import pyuvm

from lockstep.verif.host.top_env import HostTopTest


@pyuvm.test()
class HostQueue(HostTopTest):
    """The scenario's steps against the golden model: statuses, results, memory, order,
    counters, pointers and flags."""
