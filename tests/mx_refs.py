"""ml_dtypes' types of the OCP MX float elements: the independent reference the MX tests
compare :mod:`lockstep.models.bfp.mx` with (int8 is OCP's k * 2**-6, written out where
used)."""

import ml_dtypes

ML = {
    "fp8_e4m3": ml_dtypes.float8_e4m3fn,
    "fp8_e5m2": ml_dtypes.float8_e5m2,
    "fp6_e2m3": ml_dtypes.float6_e2m3fn,
    "fp6_e3m2": ml_dtypes.float6_e3m2fn,
    "fp4_e2m1": ml_dtypes.float4_e2m1fn,
}
