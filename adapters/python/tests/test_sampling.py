"""The seeded sampling stream against the known answers printed in conformance/SPEC.md (an independent source:
Random123's Threefry answers and MLX's own output as the document records them)."""

import unittest

import numpy as np

from tests.support import nb

LOGITS8 = np.array([0.5, -1.0, 2.0, 0.0, 1.5, -0.5, 1.0, -2.0], dtype=np.float32)
SEED_2_63_5 = 9223372036854775813

# SPEC.md §9: (seed, step) -> (key, bits(key, 8), uniform bits (4), gumbel bits (4), Gumbel-max, inverse CDF)
VECTORS = {
    (0, 0): ((0x9e3779b9, 0x7f4a7c15),
             [0xb015335d, 0x3cc086af, 0x8e4a8f37, 0x2f815ad1, 0x993542bc, 0x7f479280, 0xbb7a6478, 0x779b78cd],
             [0x3e819982, 0x3f7c8bd2, 0x3f2f61ee, 0x3f20b32a], [0xbea2a10d, 0x408990ad, 0x3f78e963, 0x3f43ac15], 2, 0),
    (42, 7): ((0xf1bbcdcb, 0xfa53e082),
              [0x9773ec01, 0x37f10abb, 0x5d12f437, 0xd22b8dff, 0xbbf00de6, 0x17811241, 0x0cdbe904, 0x622a1766],
              [0x3e3bd156, 0x3f5fab92, 0x3f5f6200, 0x3d3453ee], [0xbf073cdd, 0x4000280e, 0x3fff1988, 0xbf91c3e5],
              4, 6),
    (SEED_2_63_5, 1): ((0xbc6ef372, 0xfe94f82f),
                       [0xf7add0eb, 0x95d463ab, 0x78dc6e9a, 0x8b8c6727, 0x550fcfe9, 0x940fa706, 0x5a2c036f,
                        0xc2d80915],
                       [0x3e3c1d52, 0x3f0e9248, 0x3e93898b, 0x3e8fea81],
                       [0xbf06ffd2, 0x3f091b3e, 0xbe5fc5c8, 0xbe7405e4], 0, 2),
}
# SPEC.md §9: categorical(LOGITS8) for every seed and step: (Gumbel-max, inverse CDF)
CATEGORICAL = {(0, 0): (2, 0), (0, 1): (4, 2), (0, 7): (6, 2), (1, 0): (6, 2), (1, 1): (6, 2), (1, 7): (1, 2),
               (42, 0): (6, 2), (42, 1): (2, 4), (42, 7): (4, 6), (SEED_2_63_5, 0): (2, 6),
               (SEED_2_63_5, 1): (0, 2), (SEED_2_63_5, 7): (4, 4)}


class ThreefryTest(unittest.TestCase):
    def test_random123_known_answers(self):
        self.assertEqual(nb.threefry2x32((0, 0), (0, 0)), (0x6b200159, 0x99ba4efe))
        self.assertEqual(nb.threefry2x32((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff)), (0x1cb996fc, 0xbb002be7))
        self.assertEqual(nb.threefry2x32((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3)), (0xc4923a9c, 0x483df7a0))

    def test_key_of_seed_is_high_word_first(self):
        self.assertEqual(nb.key_of(1), (0, 1))


class StreamTest(unittest.TestCase):
    def test_spec_vectors(self):
        for (seed, step), (key, bits, ubits, gbits, _, _) in VECTORS.items():
            k = nb.key_of(nb.step_key(seed, step))
            self.assertEqual(k, key, (seed, step))
            self.assertEqual(nb.random_bits(k, 8), bits, (seed, step))
            self.assertEqual([int(x) for x in nb.uniform(k, 4).view(np.uint32)], ubits, (seed, step))
            # the inner log is numpy's logf, which SPEC.md §8 says may differ from glibc's by an ulp: compare values
            want = np.array(gbits, dtype=np.uint32).view(np.float32)
            np.testing.assert_allclose(nb.gumbel(k, 4), want, rtol=1e-5, atol=1e-6, err_msg=str((seed, step)))

    def test_categorical_both_rules(self):
        for (seed, step), (gumbel_max, inverse) in CATEGORICAL.items():
            k = nb.key_of(nb.step_key(seed, step))
            self.assertEqual(int(np.argmax(nb.gumbel(k, 8) + LOGITS8)), gumbel_max, (seed, step))
            self.assertEqual(nb.inverse_cdf(LOGITS8, k), inverse, (seed, step))

    def test_odd_counts_differ_from_prefixes(self):
        k = nb.key_of(5)
        self.assertNotEqual(nb.random_bits(k, 9)[:8], nb.random_bits(k, 8))
        self.assertEqual(nb.random_bits(k, 1)[0], nb.threefry2x32(k, (0, 0))[0])

    def test_uniform_clamps_below_one(self):
        # b >= 0xffffff80 rounds to 1.0f and must be clamped to 0x3f7fffff
        b = np.array([0xffffffff], dtype=np.uint32).astype(np.float32)
        self.assertEqual(float(np.minimum(b / np.float32(2 ** 32), nb._ONE_BELOW)[0]), 1 - 2 ** -24)


class ExpTest(unittest.TestCase):
    def test_mlx_exp_edges_and_accuracy(self):
        e = nb.mlx_exp(np.array([0.0, 89.0, -89.0, np.nan, 1.0], dtype=np.float32))
        self.assertEqual(e[0], 1.0)
        self.assertEqual(e[1], np.inf)
        self.assertEqual(e[2], 0.0)
        self.assertTrue(np.isnan(e[3]))
        self.assertAlmostEqual(float(e[4]), np.e, delta=1e-5)
        xs = np.linspace(-80, 80, 2001).astype(np.float32)
        rel = np.abs(nb.mlx_exp(xs) / np.exp(xs.astype(np.float64)) - 1)
        self.assertLess(rel.max(), 1e-5)


class PipelineTest(unittest.TestCase):
    def test_greedy_takes_the_first_maximum(self):
        lp = np.array([-1.0, -0.5, -0.5, -3.0], dtype=np.float32)
        self.assertEqual(nb.sample_row(lp, 0.0, 0, 1.0, 0, 0), 1)

    def test_top_k_one_is_the_argmax_whatever_the_noise(self):
        lp = np.log(np.array([0.1, 0.6, 0.3], dtype=np.float64)).astype(np.float32)
        for step in range(20):
            self.assertEqual(nb.sample_row(lp, 1.0, 1, 1.0, 7, step), 1)

    def test_top_p_keeps_only_the_head(self):
        # ascending order 0.05, 0.15, 0.8: running sums 0.05, 0.2, 1.0; keep those > 1 - 0.5 = 0.5 -> only token 2
        lp = np.log(np.array([0.15, 0.8, 0.05], dtype=np.float64)).astype(np.float32)
        lp = np.array([lp[0], lp[1], lp[2]], dtype=np.float32)
        for step in range(20):
            self.assertEqual(nb.sample_row(lp, 1.0, 0, 0.5, 3, step), 1)

    def test_seeded_draw_is_the_inverse_cdf_of_the_step_key(self):
        lp = LOGITS8 - np.float32(np.log(np.sum(np.exp(LOGITS8.astype(np.float64)))))
        # temperature 1, no filters: the draw is the inverse CDF of exp(lp - max) = the LOGITS8 weights
        for (seed, step), (_, inverse) in CATEGORICAL.items():
            self.assertEqual(nb.sample_row(lp.astype(np.float32), 1.0, 0, 1.0, seed, step), inverse, (seed, step))


if __name__ == "__main__":
    unittest.main()
