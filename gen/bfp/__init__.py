"""MyHDL generators for the block-floating-point family (spec 004), one module per unit.

Every unit reads one :class:`~lockstep.models.formats.BfpFormat` and implements the
semantics documented in :mod:`lockstep.models.bfp`; the golden model is the reference.
"""

from .quantizer import QUANT_FLAGS, QUANTIZER_LATENCY, emit_quantizer, quantizer, quantizer_ports

__all__ = ["QUANT_FLAGS", "QUANTIZER_LATENCY", "emit_quantizer", "quantizer", "quantizer_ports"]
