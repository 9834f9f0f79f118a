"""MyHDL generators for the block-floating-point family (spec 004), one module per unit.

Every unit reads one parameter record (:class:`~lockstep.models.bfp.params.BfpFormat`, or
:class:`~lockstep.models.bfp.params.MxParams` for the OCP MX quantizer) and implements the
semantics documented in :mod:`lockstep.models.bfp` / :mod:`lockstep.models.bfp.mx`; the
golden model is the reference.

| unit | module | generator |
|---|---|---|
| float32 -> BFP quantizer | ``bfp_quantize`` | :func:`emit_quantizer` |
| dot product + bias | ``bfp_dot`` | :func:`emit_dot` |
| renormaliser (max/fixed e4) | ``bfp_renorm`` | :func:`emit_renorm` |
| statistics-mode exponent | ``bfp_stats`` | :func:`emit_stats` |
| BFP -> float32 | ``bfp_to_float`` | :func:`emit_to_float` |
| float32 -> OCP MX | ``bfp_mx_quantize`` | :func:`emit_mx_quantizer` |
"""

from .dot import DOT_FLAGS, DOT_LATENCY, dot_ports, emit_dot
from .mx import MX_FLAGS, MX_LATENCY, emit_mx_quantizer, mx_quantizer_ports
from .quantizer import QUANT_FLAGS, QUANTIZER_LATENCY, emit_quantizer, quantizer, quantizer_ports
from .renorm import RENORM_FLAGS, RENORM_LATENCY, emit_renorm, emit_stats, renorm_ports, stats_ports
from .tofloat import TO_FLOAT_FLAGS, TO_FLOAT_LATENCY, emit_to_float, to_float, to_float_ports

__all__ = [
    "DOT_FLAGS",
    "DOT_LATENCY",
    "MX_FLAGS",
    "MX_LATENCY",
    "QUANT_FLAGS",
    "QUANTIZER_LATENCY",
    "RENORM_FLAGS",
    "RENORM_LATENCY",
    "TO_FLOAT_FLAGS",
    "TO_FLOAT_LATENCY",
    "dot_ports",
    "emit_dot",
    "emit_mx_quantizer",
    "emit_quantizer",
    "emit_renorm",
    "emit_stats",
    "emit_to_float",
    "mx_quantizer_ports",
    "quantizer",
    "quantizer_ports",
    "renorm_ports",
    "stats_ports",
    "to_float",
    "to_float_ports",
]
