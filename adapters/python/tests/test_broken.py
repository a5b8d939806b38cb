"""The deliberately broken copy differs from the engine exactly where its bug is (full acceptance) and nowhere
else; the kit's own run of it (a failing `mtp conform` with a shrunk trace) is the wire module's JUnit test."""

import importlib.util
import os
import unittest

import numpy as np

from tests.support import EXAMPLES, EXTERNAL, GREEDY, external, f32, i32, nb


def broken_module():
    real_commit = nb.Rows.commit
    spec = importlib.util.spec_from_file_location("broken_numpy_backend",
                                                  os.path.join(EXAMPLES, "broken_numpy_backend.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)          # patches nb.Rows.commit
    broken = nb.Rows.commit
    nb.Rows.commit = real_commit
    return broken, real_commit


@unittest.skipUnless(os.path.isdir(EXTERNAL), "external reference data not found")
class BrokenCopyTest(unittest.TestCase):
    def run_round(self, commit, accepted):
        m = nb.Model(external("bfloat16")[0], "b")
        g = m.open_rows([None])
        rng = np.random.default_rng(5)
        g.prefill(i32(rng.integers(0, 1000, (1, 4))), f32(rng.standard_normal((1, 4, 256))))
        g.draft([3], 2, [1], [GREEDY])
        commit(g, [accepted], f32(rng.standard_normal((1, 3, 256))))
        return g.capture(0)

    def test_broken_copy_diverges_only_at_full_acceptance(self):
        broken, real = broken_module()
        for acc in (0, 1):
            a, b = self.run_round(real, acc), self.run_round(broken, acc)
            self.assertEqual(bytes(a.keys.data), bytes(b.keys.data), acc)
        a, b = self.run_round(real, 2), self.run_round(broken, 2)
        x, y = a.keys.array().astype(np.float64), b.keys.array().astype(np.float64)
        self.assertGreater(np.sum((x - y) ** 2) / np.sum(x ** 2), 1e-6)


if __name__ == "__main__":
    unittest.main()
