"""``lockstep.models.mx``, the former path of :mod:`lockstep.models.bfp.mx`.

Importing it gives that very module (not a copy), so code written against the old path
keeps working; nothing inside lockstep imports it.
"""

import sys

from .bfp import mx as _module

sys.modules[__name__] = _module
