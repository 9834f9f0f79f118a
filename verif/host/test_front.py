"""cocotb test module for the host family's command front end ``host_front`` (started by
lockstep.verif.runner); the ``phases`` option lists the run's phases
(verif/host/front_env.py)."""

import pyuvm

from lockstep.verif.host.front_env import FrontTest


@pyuvm.test()
class FrontPhases(FrontTest):
    """The phases against lockstep.models.host.FrontModel: every status, the dispatched
    commands, the CQ order rules, the pointer and IRQ rules, halt, CQ full, flush and the
    counters."""
