"""The numpy engine's hybrid target (numpy_mtp/target.py: its float64 Gated DeltaNet, attention and head) on mtp_wire's
target row skeleton: this file is the whole target adapter; numpy_skeleton_backend.py serves it beside the drafter."""
import numpy as np
import mtp_wire
from numpy_mtp.target import HybridTarget, RowState

class NumpyTargetRows(mtp_wire.TargetRowsSkeleton):   # storage: a tuple of RowStates (in a round: (RowState, gdn, kv))
    def __init__(self, t, args):
        super().__init__(mtp_wire.TargetShape.of(args.config, t.identity))
        self.t = t
    def append_rows(self, state, restored):   # a TargetRowState per restored row, None when empty
        return state + tuple(self.t.empty_state() if r is None else RowState(
            r.processed, [w.T for w in r.conv_windows], r.recurrent_states, r.keys, r.values) for r in restored)
    def forward(self, state, at, ids, s, verify):   # each row knows its own P (at[b]); its state is replaced
        out = []
        for b, row in enumerate(state):   # a MoE target reports (row, position, layer, experts) per router decision
            out.append(self.t.forward(row, ids[b], keep_every=verify))
            self.router.extend((b, p, layer, e) for p, layer, e in self.t.last_experts)
        logits = np.stack([(y if verify else y[-1:]) @ self.t.head.T for _, y, _, _ in out])
        nxt = tuple((row, g, kv) if verify else RowState(row.processed + s, [w[-1] for w, _ in g],
                                                         [st[-1] for _, st in g], [k for k, _ in kv], [v for _, v in kv])
                    for row, (_, _, g, kv) in zip(state, out))
        return mtp_wire.Forwarded(logits, np.stack([o[0] for o in out]), np.stack([o[1] for o in out]), nxt)
    def rollback(self, verified, before, keep):   # row b keeps the state after its first keep[b] verified tokens
        return tuple(RowState(row.processed + k, [ws[k - 1] for ws, _ in g], [sts[k - 1] for _, sts in g],
                              [x[:, :row.processed + k] for x, _ in kv], [v[:, :row.processed + k] for _, v in kv])
                     for (row, g, kv), k in zip(verified, keep))
    def export(self, state, row, processed):
        r = state[row]
        return mtp_wire.TargetRowState(processed, [w.T for w in r.windows], r.states, r.keys, r.values)

def load_target(args):
    return HybridTarget(args.directory, args.identity)
