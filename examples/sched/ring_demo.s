# A three-tile ring program in lockstep schedule assembly (docs/sched.md section 10).
# Run it:   make sim TEST=sched_example          (checked cycle by cycle against the model)
# Edit it, run again: the linter refuses an illegal schedule before any simulation, and
# the testbench compares every issue, link word, bus word and memory write with the
# golden executor. Default fabric: cw=24, nt=3, dw=16, hop_lat=1 (l_path = 3), l_alu=2.

.tile 0
.data 0x10: 1 2 3 4 5 6 7 8
@2      SEND  port=next a=0x10 len=8      # words on out[next] in cycles 3..10
@47     RECV  port=prev d=0x30 len=1      # tile 2's dot product: sent at 44, poppable 47
.periodic @60 period=6 reps=4             # a compressed block: 4 repetitions of 2 ops
  +0    VADD  a=0x10 b=0x11 d=0x50 len=1
  +3    VMUL  a=0x12 b=0x13 d=0x51 len=1
.end
@100    HALT

.tile 1
.data 0x20: 10 20 30 40 50 60 70 80
@5      RECV  port=prev d=0 len=8         # zero slack: word i poppable at 2 + 3 + i
@13     VADD  a=0 b=0x20 d=0x40 len=8     # 11 22 ... 88, written at the ends of 14..21
@22     SEND  port=bus a=0x40 len=8       # on the bus register in cycles 24..31
@40     HALT

.tile 2
@24     TAP   port=bus d=0 len=8          # the bus is read only by TAP, exactly on time
@34     DOT   a=0 b=0 d=0x80 len=8        # sum of squares, written at the end of 42
@44     SEND  port=next a=0x80 len=1
@50     HALT
