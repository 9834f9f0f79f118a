# Periodic (compressed) blocks at the extremes of the period: P = 255 and P = 1.
# Run it: make sim TEST=sched_periodic_extremes
.tile 0
.data 0: 1 2
.periodic @10 period=255 reps=3          # ops at 10, 264 (+254), 265, 519, 520, 774
  +0    VADD  a=0 b=1 d=2 len=1
  +254  VMUL  a=0 b=1 d=3 len=1
.end
.periodic @800 period=1 reps=20          # back to back: one VADD per count, 800..819
  +0    VADD  a=2 b=1 d=2 len=1
.end
@900    HALT
.tile 1
@2      HALT
.tile 2
@2      HALT
