"""The numpy engine (numpy_mtp: the float64 block, the seeded sampler) on the SDK's row skeleton: this file is the whole
adapter; validation, bookkeeping, chunking, atomic publish and checkpoints are mtp_wire.RowsSkeleton's.
    mtp tck --backend exec:'python3 adapters/python/examples/numpy_skeleton_backend.py'"""
import sys
import numpy as np
import mtp_wire
from numpy_mtp.rows import Model
from numpy_mtp.sampling import sample_row

class NumpyRows(mtp_wire.RowsSkeleton):   # storage: one (RowCache, retained hidden) per row; K/V written at `at` on
    def __init__(self, m, args):
        super().__init__(mtp_wire.RowShape.of(args.config, m.identity))
        self.m = m
    def append_rows(self, state, restored):
        return state + tuple((self.m.new_cache(*(r[:2] if r and r.keys is not None else ())), r and r.hidden) for r in restored)
    def keep_rows(self, state, keep, lengths):
        return tuple(state[i] for i in keep)
    def forward(self, state, at, rows, ids, hin):
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
        kv, h = state[row]
        return kv.k[:, :length], kv.v[:, :length], h

QUANT = [{"bits": b, "groupSizes": [32, 64, 128]} for b in (2, 3, 4, 5, 6, 8)]
if __name__ == "__main__":
    sys.exit(mtp_wire.serve_rows("numpy-mtp-skeleton", "1.0", lambda a: Model(a.directory, a.identity), NumpyRows,
                                 numerics="numpy float64 (float32 log-probs for sampling)", seededSampling=True,
                                 routerChoices=True, weightDtypes=["F32", "F16", "BF16"], quantization=QUANT,
                                 layouts=["hf", "companion"]))
