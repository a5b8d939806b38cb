package org.mtporacle.reference.sampling;

/**
 * MLX's counter-based random generator (mlx/random.cpp with the CPU RandomBits primitive), reproduced bit for bit:
 * Threefry-2x32 with 20 rounds, keys of two uint32 words, and the float32 uniform, Gumbel and categorical draws built
 * on it. Every function is pure: the output depends only on the key and the count. The definition is written out in
 * conformance/SPEC.md, "Random stream for seeded draft sampling".
 */
public final class MlxRandom {
    private static final int[][] ROTATIONS = {{13, 15, 26, 6}, {17, 29, 16, 24}};
    private static final int KEY_PARITY = 0x1BD11BDA;
    /** {@code std::nextafter(1.0f, 0.0f)}: uniform draws are clamped to this so they stay below 1. */
    static final float BELOW_ONE = Math.nextDown(1.0f);
    /** {@code float(UINT32_MAX)}, which rounds to 2^32: the divisor that maps bits to [0, 1]. */
    private static final float UINT32_MAX_AS_FLOAT = (float) 0xFFFFFFFFL;

    private MlxRandom() {
    }

    /** An MLX key: the uint32 array {@code [k0, k1]} (words held as Java ints, read unsigned). */
    public record Key(int k0, int k1) {
        @Override
        public String toString() {
            return String.format("Key[0x%08x, 0x%08x]", k0, k1);
        }
    }

    /** Two uint32 words, in output order. */
    public record Words(int first, int second) {
    }

    /** {@code mx.random.key(seed)}: the high 32 bits of the seed first, then the low 32 bits. */
    public static Key key(long seed) {
        return new Key((int) (seed >>> 32), (int) seed);
    }

    /**
     * Threefry-2x32-20 of the counter {@code (c0, c1)} under {@code key}: five groups of four mix rounds, rotations
     * {13,15,26,6} then {17,29,16,24}, key schedule {@code k0, k1, k0^k1^0x1BD11BDA}, injection after each group.
     */
    public static Words threefry2x32(Key key, int c0, int c1) {
        int[] ks = {key.k0, key.k1, key.k0 ^ key.k1 ^ KEY_PARITY};
        int x0 = c0 + ks[0];
        int x1 = c1 + ks[1];
        for (int i = 0; i < 5; i++) {
            for (int r : ROTATIONS[i % 2]) {
                x0 += x1;
                x1 = Integer.rotateLeft(x1, r);
                x1 ^= x0;
            }
            x0 += ks[(i + 1) % 3];
            x1 += ks[(i + 2) % 3] + i + 1;
        }
        return new Words(x0, x1);
    }

    /**
     * {@code mx.random.bits([count], width=4, key)}: with {@code h = count / 2} and {@code o = count % 2}, word
     * {@code i < h} and word {@code i + h + o} are the two halves of Threefry at counter {@code (i, i + h + o)}; when
     * {@code count} is odd, word {@code h} is the first half of Threefry at counter {@code (h, 0)}.
     */
    public static int[] bits(Key key, int count) {
        if (count < 0) {
            throw new IllegalArgumentException("bits: count = " + count + " must be ≥ 0");
        }
        int[] out = new int[count];
        int half = count / 2;
        int odd = count % 2;
        for (int i = 0; i < half; i++) {
            Words w = threefry2x32(key, i, i + half + odd);
            out[i] = w.first;
            out[i + half + odd] = w.second;
        }
        if (odd == 1) {
            out[half] = threefry2x32(key, half, 0).first;
        }
        return out;
    }

    /** {@code mx.random.split(key, num)}: key {@code j} is words {@code 2j, 2j+1} of {@code bits(key, 2·num)}. */
    public static Key[] split(Key key, int num) {
        int[] b = bits(key, 2 * num);
        Key[] keys = new Key[num];
        for (int j = 0; j < num; j++) {
            keys[j] = new Key(b[2 * j], b[2 * j + 1]);
        }
        return keys;
    }

    /** {@code mx.random.split(key)}: the pair {@code split(key, 2)}. */
    public static Key[] split(Key key) {
        return split(key, 2);
    }

    /** One uniform from one uint32: {@code min(float32(b) / float32(2^32 − 1), nextafter(1, 0))}, in [0, 1). */
    public static float uniformOf(int bits) {
        float u = (float) Integer.toUnsignedLong(bits) / UINT32_MAX_AS_FLOAT;
        // MLX then computes range · u + low = 1 · u + 0, which is exact.
        return Math.min(u, BELOW_ONE);
    }

    /** {@code mx.random.uniform(shape=[count], dtype=float32, key)}: {@link #uniformOf} of each of {@link #bits}. */
    public static float[] uniform(Key key, int count) {
        int[] b = bits(key, count);
        float[] u = new float[count];
        for (int i = 0; i < count; i++) {
            u[i] = uniformOf(b[i]);
        }
        return u;
    }

    /**
     * {@code mx.random.gumbel(shape=[count], float32, key)}: {@code −log(−log(u))} in float32 on {@link #uniform};
     * {@code u = 0} (all-zero bits) gives {@code −inf}.
     */
    public static float[] gumbel(Key key, int count) {
        float[] g = uniform(key, count);
        for (int i = 0; i < count; i++) {
            g[i] = -MlxCpuExpLog.log(-MlxCpuExpLog.log(g[i]));
        }
        return g;
    }

    /**
     * The Gumbel-max categorical draw: {@code argmax(gumbel(key, n)[i] + logits[off + i])} in float32, lowest index
     * on ties. This is {@code mx.random.categorical} for any logits before MLX 0.32.1, and for 1-D logits after it.
     */
    public static int categorical(float[] logits, int off, int n, Key key) {
        checkRow("categorical", logits, off, n);
        float[] g = gumbel(key, n);
        int best = 0;
        float bestValue = g[0] + logits[off];
        for (int i = 1; i < n; i++) {
            float v = g[i] + logits[off + i];
            if (v > bestValue) { // MLX's argmax: strictly greater, so the first maximum wins and NaN never does
                best = i;
                bestValue = v;
            }
        }
        return best;
    }

    /**
     * The inverse-CDF categorical draw of MLX ≥ 0.32.1 for a single row ({@code [1, V]} logits): weights
     * {@code w = exp(x − max x)} (or the indicator of {@code x == max x} when the max is infinite), exclusive running
     * sum {@code c}, one uniform {@code u = uniform(key, 1)[0] · Σw}, and the result is the last {@code i} with
     * {@code c[i] ≤ u}. All sums run left to right in float32.
     */
    public static int categoricalInverseCdf(float[] logits, int off, int n, Key key) {
        checkRow("categoricalInverseCdf", logits, off, n);
        float m = logits[off];
        for (int i = 1; i < n; i++) {
            m = Math.max(m, logits[off + i]); // MLX's max propagates NaN, as Math.max does
        }
        float[] cdf = new float[n];
        float running = 0.0f;
        for (int i = 0; i < n; i++) {
            float x = logits[off + i];
            float w = Float.isInfinite(m) ? (x == m ? 1.0f : 0.0f) : MlxCpuExpLog.exp(x - m);
            cdf[i] = running;
            running += w;
        }
        float u = uniform(key, 1)[0] * running;
        // searchsorted(cdf, u, side="right") − 1: binary search for the first c[i] > u.
        int lo = 0;
        int hi = n;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (!(u < cdf[mid])) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo - 1;
    }

    private static void checkRow(String op, float[] logits, int off, int n) {
        if (n <= 0 || off < 0 || off + n > logits.length) {
            throw new IllegalArgumentException(op + ": row [" + off + ", " + off + " + " + n + ") is empty or outside "
                    + "an array of length " + logits.length);
        }
    }
}
