"""Golden models of the block-floating-point (BFP) family (spec 004), with the OCP MX presets.

The BFP block arithmetic (quantizer, dot product and matrix-vector product, renormaliser,
statistics-mode exponent selector, BFP -> float32) is :mod:`lockstep.models.bfp.core`;
OCP Microscaling v1.0 quantization is :mod:`lockstep.models.bfp.mx`; the parameter records
(:class:`BfpFormat`, :class:`MxParams`) are :mod:`lockstep.models.bfp.params`. Everything
public is re-exported here, so a testbench needs only ``from lockstep.models import bfp``.

Example:
    >>> import numpy as np
    >>> from lockstep.models import bfp
    >>> fmt = bfp.BfpFormat(w=8, e=5, n=4)
    >>> x, m, flags = bfp.quantize(np.array([1.0, -0.5, 0.25, 3.0], np.float32), fmt)
    >>> int(x), m.tolist(), bfp.decode_flags(int(flags))
    (-5, [32, -16, 8, 96], [])
"""

from __future__ import annotations

from . import core, mx
from .core import *  # noqa: F401,F403 - the public names, listed in core.__all__
from .mx import mx_dequantize, mx_quantize
from .params import MX_ELEMENTS, PATENT, BfpFormat, MxElement, MxParams

__all__ = [*core.__all__, "mx_quantize", "mx_dequantize", "BfpFormat", "MxParams", "MxElement", "MX_ELEMENTS",
           "PATENT"]
