"""``lockstep.models.host_lib``, the former path of :mod:`lockstep.models.host.lib`.

Importing it gives that very module (not a copy), so code written against the old path
keeps working; nothing inside lockstep imports it.
"""

import sys

from .host import lib as _module

sys.modules[__name__] = _module
