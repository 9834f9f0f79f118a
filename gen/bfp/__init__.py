"""MyHDL generators for the block-floating-point family (spec 004), one module per unit.

Every unit reads one :class:`~lockstep.models.formats.BfpFormat` and implements the
semantics documented in :mod:`lockstep.models.bfp`; the golden model is the reference.
"""

from .dot import DOT_FLAGS, DOT_LATENCY, dot_ports, emit_dot
from .quantizer import QUANT_FLAGS, QUANTIZER_LATENCY, emit_quantizer, quantizer, quantizer_ports
from .tofloat import TO_FLOAT_FLAGS, TO_FLOAT_LATENCY, emit_to_float, to_float, to_float_ports

__all__ = [
    "DOT_FLAGS",
    "DOT_LATENCY",
    "dot_ports",
    "emit_dot",
    "QUANT_FLAGS",
    "QUANTIZER_LATENCY",
    "TO_FLOAT_FLAGS",
    "TO_FLOAT_LATENCY",
    "emit_quantizer",
    "emit_to_float",
    "quantizer",
    "quantizer_ports",
    "to_float",
    "to_float_ports",
]
