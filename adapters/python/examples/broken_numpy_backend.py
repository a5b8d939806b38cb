#!/usr/bin/env python3
"""A deliberately broken copy of numpy_backend.py, to show that the kit catches and shrinks a realistic bug.

The bug: at full acceptance, commit builds the last proposal's drafter row from the verify tap *after* it,
context[:, depth], instead of the true hidden preceding it, context[:, depth - 1] (spec §5.8 step 2). Every other
call is the real engine's. `mtp tck` fails required_s5_8_commitKeepsAcceptedPlusOneRows and `mtp conform` writes
a shrunk trace (prefill, draft, commit with full acceptance, then a checkpoint whose keys/values diverge).

    mtp conform --backend exec:'python3 adapters/python/examples/broken_numpy_backend.py' --fixture tiny
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy_backend as nb  # noqa: E402
from mtp_wire import errors as E  # noqa: E402


def broken_commit(self, accepted, context):
    self._usable("commit")
    if not self.round_open:
        raise E.illegal_state("commit: no draft round is open (spec §5.8)")
    b, d = len(self.rows), self.depth
    if accepted is None:
        raise E.invalid_argument("commit: accepted is null")
    if len(accepted) != b:
        raise E.invalid_argument("commit: accepted has %d entries, expected %d (one per row)" % (len(accepted), b))
    for r, a in enumerate(accepted):
        if not isinstance(a, int) or a < 0 or a > d:
            raise E.invalid_argument("commit: accepted[%d] = %s outside [0, %d], the draft depth (spec §5.8)"
                                     % (r, a, d))
    ctx = self._context("commit", context, b, d + 1, "width = depth + 1 = %d verify taps" % (d + 1))
    appended = max(1, d)
    for r, row in enumerate(self.rows):
        row.kv.length = row.before + min(accepted[r] + 1, appended)
        if d > 0 and accepted[r] == d:
            # BUG (deliberate): the tap after the last proposal, not the one preceding it
            self.m.block.forward(row.kv, np.array([row.drafts[d - 1]]), ctx[r, d][None, :])
    for r, row in enumerate(self.rows):
        row.hidden = ctx[r, accepted[r]].copy()
        row.drafts = []
    self.round_open = False
    self.depth = 0


class BrokenEngine(nb.NumpyEngine):
    name = "numpy-mtp-broken"

    def hello_result(self):
        r = super().hello_result()
        r["profiles"][0]["label"] = "numpy-f64-broken"
        r["description"] = "numpy_backend.py with a deliberate bug in commit at full acceptance (spec §5.8 step 2)"
        return r


nb.Rows.commit = broken_commit

if __name__ == "__main__":
    sys.exit(nb.mtp_wire.serve(BrokenEngine()))
