package org.mtporacle.reference.sampling;

import java.util.Locale;

/**
 * Prints the seeded-sampling test vectors: {@code table} writes the markdown of conformance/SPEC.md, {@code dump}
 * writes one line per value in the format the MLX cross-check program (outside the repository) prints, for a diff.
 */
public final class SpecVectorPrinter {
    static final long[] SEEDS = {0L, 1L, 42L, Long.MIN_VALUE + 5};
    static final long[] STEPS = {0L, 1L, 7L};
    static final float[] LOGITS8 = {0.5f, -1.0f, 2.0f, 0.0f, 1.5f, -0.5f, 1.0f, -2.0f};
    /** Counts for the dump: odd and even, so both halves of the bits layout are compared. */
    static final int[] DUMP_COUNTS = {1, 2, 7, 8, 1001};

    private SpecVectorPrinter() {
    }

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("dump")) {
            dump();
        } else {
            table();
        }
    }

    static void table() {
        StringBuilder sb = new StringBuilder();
        for (long seed : SEEDS) {
            for (long step : STEPS) {
                long sk = DraftSampler.stepKey(seed, step);
                MlxRandom.Key key = MlxRandom.key(sk);
                sb.append(String.format(Locale.ROOT, "#### seed %s, step %d%n%n", Long.toUnsignedString(seed), step));
                sb.append(String.format(Locale.ROOT, "- stepKey = 0x%016x, key = [0x%08x, 0x%08x]%n", sk, key.k0(),
                        key.k1()));
                sb.append("- bits(key, 8) =");
                for (int b : MlxRandom.bits(key, 8)) {
                    sb.append(String.format(Locale.ROOT, " 0x%08x", b));
                }
                sb.append(String.format(Locale.ROOT, "%n- uniform(key, 4) ="));
                for (float u : MlxRandom.uniform(key, 4)) {
                    sb.append(String.format(Locale.ROOT, " 0x%08x (%s)", Float.floatToRawIntBits(u), u));
                }
                sb.append(String.format(Locale.ROOT, "%n- gumbel(key, 4) ="));
                for (float g : MlxRandom.gumbel(key, 4)) {
                    sb.append(String.format(Locale.ROOT, " 0x%08x (%s)", Float.floatToRawIntBits(g), g));
                }
                sb.append(String.format(Locale.ROOT, "%n- categorical(LOGITS8): Gumbel-max → %d, inverse CDF → %d%n%n",
                        MlxRandom.categorical(LOGITS8, 0, 8, key),
                        MlxRandom.categoricalInverseCdf(LOGITS8, 0, 8, key)));
            }
        }
        System.out.print(sb);
    }

    static void dump() {
        StringBuilder sb = new StringBuilder();
        for (long seed : SEEDS) {
            for (long step : STEPS) {
                long sk = DraftSampler.stepKey(seed, step);
                MlxRandom.Key key = MlxRandom.key(sk);
                String tag = Long.toUnsignedString(seed) + " " + step;
                sb.append(String.format(Locale.ROOT, "key %s %08x %08x%n", tag, key.k0(), key.k1()));
                for (int n : DUMP_COUNTS) {
                    int[] bits = MlxRandom.bits(key, n);
                    float[] u = MlxRandom.uniform(key, n);
                    float[] g = MlxRandom.gumbel(key, n);
                    for (int i = 0; i < n; i++) {
                        sb.append(String.format(Locale.ROOT, "v %s %d %d %08x %08x %08x%n", tag, n, i, bits[i],
                                Float.floatToRawIntBits(u[i]), Float.floatToRawIntBits(g[i])));
                    }
                }
                MlxRandom.Key[] halves = MlxRandom.split(key);
                sb.append(String.format(Locale.ROOT, "split %s %08x %08x %08x %08x%n", tag, halves[0].k0(),
                        halves[0].k1(), halves[1].k0(), halves[1].k1()));
                sb.append(String.format(Locale.ROOT, "cat8 %s %d%n", tag, MlxRandom.categorical(LOGITS8, 0, 8, key)));
                float[] big = wideLogits(seed, step);
                sb.append(String.format(Locale.ROOT, "cat1000 %s %d%n", tag,
                        MlxRandom.categorical(big, 0, big.length, key)));
            }
        }
        sb.append(expDump());
        System.out.print(sb);
    }

    /** 1000 logits in [−8, 8): {@code ((i·7919 + 31·step + seed_low) mod 1000) / 62.5 − 8}, exact in float32. */
    static float[] wideLogits(long seed, long step) {
        float[] x = new float[1000];
        for (int i = 0; i < x.length; i++) {
            long r = Math.floorMod(i * 7919L + 31 * step + (seed & 0xFFFF), 1000L);
            x[i] = r / 62.5f - 8.0f;
        }
        return x;
    }

    /** MLX's exp on a grid of arguments: {@code −90 + i / 64} for i in [0, 11520], exact in float32. */
    static String expDump() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i <= 11520; i++) {
            float x = -90.0f + i / 64.0f;
            sb.append(String.format(Locale.ROOT, "exp %08x %08x%n", Float.floatToRawIntBits(x),
                    Float.floatToRawIntBits(MlxCpuExpLog.exp(x))));
        }
        return sb.toString();
    }
}
