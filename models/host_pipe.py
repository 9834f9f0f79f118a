"""``lockstep.models.host_pipe``, the former path of :mod:`lockstep.models.host.pipe`.

Importing it gives that very module (not a copy), so code written against the old path
keeps working; nothing inside lockstep imports it.
"""

import sys

from .host import pipe as _module

sys.modules[__name__] = _module
