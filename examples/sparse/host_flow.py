"""The sparse engine's host flow with the golden models only (no simulator).

This is what a testbench of your own (or a driver) does with ``lockstep.models.sparse``
around a cluster of sparse compute units (docs/sparse.md): partition a skewed map so
every unit gets about the same number of non-zeros, encode each cell into the stream
words the memory units take, predict every unit's output words and cycles, and put the
units' results back together. The last lines check the combination against an explicit
numpy correlation, written here without the models.

Run it:  ci/env.sh python examples/sparse/host_flow.py   (tests/test_examples.py runs it too)
"""

from __future__ import annotations

import numpy as np

from lockstep.models import sparse
from lockstep.models.sparse.params import SparseParams

params = SparseParams(p=4, kmax=3, hmax=16, wmax=16, depth=256, ow=20, m=4)   # cells up to 16 x 16
rng = np.random.default_rng(7)

# a 16 x 16 map whose non-zeros crowd into the top-left corner, and a sparse 3 x 3 kernel
H, W, K = 16, 16, 3
X = rng.integers(-100, 100, (H, W)) * (rng.random((H, W)) < np.linspace(0.9, 0.05, H)[:, None] ** 0.5)
X[:, W // 2:] *= rng.random((H, W - W // 2)) < 0.3
Wk = rng.integers(-50, 50, (K, K)) * (rng.random((K, K)) < 0.6)

# 1. partition over 2 x 2 units: balance the non-zeros to within 20% (met says whether it could)
part = sparse.partition(X, 2, 2, t_pct=20)
print(f"cells {part.cells}  loads {part.loads} (equal grid {part.equal_loads})  met={part.met}")

# 2. encode: per unit, the 64-bit descriptor and the data words (what the memory unit takes)
weights = sparse.encode_weights(Wk, order="snake")
w_words = sparse.pack_weights(weights, params)          # LAST goes on the final entry
w_stored = sparse.load_weights(w_words, K, params)      # what the weight memory keeps
assert w_stored.err == 0, sparse.err_names(w_stored.err, params.W_ERR_NAMES)
units = []
for r0, r1, c0, c1 in part.cells:
    sub = sparse.encode(X[r0:r1, c0:c1], org=(r0, c0))
    desc_word = sparse.pack_desc(sub)
    data_words = sparse.pack_data(sub.entries, params)
    stored = sparse.load_data(desc_word, data_words, params)      # what the memory unit keeps (and its errors)
    assert stored.err == 0, sparse.err_names(stored.err, params.MEM_ERR_NAMES)
    units.append((sparse.Cfg(k=K, h=r1 - r0, w=c1 - c0), stored.entries))

# 3. predict one cluster pass: per unit the output words, the counters and start-to-done cycles
run = sparse.cluster_run(units, w_stored.entries, params)
for i, job in enumerate(run.units):
    out_words = sparse.pack_out(job.out_entries, params)  # what the unit must emit, in order
    print(f"unit {i}: q={len(units[i][1]):3d}  cyc_compute={job.cyc_compute:3d} (= WNZ*ceil(q/p))  "
          f"n_mults={job.n_mults:4d}  start->done={sparse.cycles(job):3d}  {len(out_words)} output words")
print(f"cluster: {run.cluster_cycles} cycles start to done; compute makespan {run.makespan}")

# 4. combine: overlap-add the units' full correlations into the whole map's
full = sparse.combine(part.cells, run.units, (H, W), K)

# independent check: the full correlation by an explicit loop over the kernel
ref = np.zeros((H + K - 1, W + K - 1), dtype=np.int64)
for a in range(K):
    for b in range(K):
        ref[K - 1 - a:K - 1 - a + H, K - 1 - b:K - 1 - b + W] += Wk[a, b] * X
assert np.array_equal(full, ref), "overlap-add differs from the numpy correlation"
print("overlap-add of the units == numpy full correlation of the whole map")
