"""The numpy engine (numpy_mtp: its float64 block and seeded sampler) on mtp_wire's row skeleton: this file is the
drafter's whole adapter. Run: mtp tck --backend exec:'python3 adapters/python/examples/numpy_skeleton_backend.py'"""
import sys
import numpy as np
import mtp_wire
from numpy_mtp.rows import Model
from numpy_mtp.sampling import sample_row
from numpy_skeleton_target import NumpyTargetRows, load_target   # the hybrid target's adapter (WIRE.md §5.2)

class NumpyRows(mtp_wire.RowsSkeleton):   # storage: a tuple of (RowCache, retained hidden), one per row
    def __init__(self, m, args):
        super().__init__(mtp_wire.RowShape.of(args.config, m.identity))
        self.m = m
    def append_rows(self, state, restored):   # a RowState (keys, values, hidden) per restored row, None when cold
        return state + tuple((self.m.new_cache(*(r[:2] if r and r.keys is not None else ())), r and r.hidden)
                             for r in restored)
    def forward(self, state, at, rows, ids, hin):   # K/V at at[b] on: past the published length, which nothing reads
        ys = [None] * len(state)
        for b, (kv, h) in enumerate(state):
            if rows is None or rows[b]:
                kv.length = at[b]
                ys[b] = self.m.block.forward(kv, ids[b], h[None] if hin is None else hin[b])
                self.router.extend((b, p, e) for p, e in getattr(self.m.block, "last_experts", ()))
        return state, ys
    def retain(self, state, hidden):
        return tuple((kv, hidden[b]) for b, (kv, _) in enumerate(state))
    def sample(self, row, y, s, step):
        return sample_row(self.m.block.log_probs(y).astype(np.float32), s.temperature, s.top_k, s.top_p, s.seed, step)
    def export(self, state, row, length):
        return state[row][0].k[:, :length], state[row][0].v[:, :length], state[row][1]

if __name__ == "__main__":
    sys.exit(mtp_wire.serve_rows("numpy-mtp-skeleton", "1.0", lambda a: Model(a.directory, a.identity), NumpyRows,
                                 load_target=load_target, target_rows=NumpyTargetRows, seededSampling=True,
                                 routerChoices=True, targetRouterChoices=True, weightDtypes=["F32", "F16", "BF16"],
                                 quantization=[{"bits": b, "groupSizes": [32, 64, 128]} for b in (2, 3, 4, 5, 6, 8)]))
