package org.mtporacle.api;

/**
 * One request's draft sampler (spec §7): greedy when {@code temperature == 0} (lowest index on ties), otherwise top-p
 * (when {@code 0 < topP < 1}), then top-k (when {@code topK > 0}), then temperature, then a categorical draw whose
 * noise is the documented function of {@code (seed, step)} in {@code conformance/SPEC.md}.
 */
public record RowSampler(double temperature, int topK, double topP, long seed) {
    public static final RowSampler GREEDY = new RowSampler(0.0, 0, 1.0, 0L);

    /**
     * The smallest positive temperature (spec §7): the draw scales log-probs by {@code f32(1 / T)}, and below about
     * {@code 6e-38} the scaled maximum (a log-prob ≥ −ln V ≥ −22) overflows to −inf, so the draw is no longer the
     * argmax; {@code 1e-30} keeps a margin of seven orders of magnitude. Temperature 0 is greedy.
     */
    public static final double MIN_TEMPERATURE = 1e-30;

    public RowSampler {
        if (!(temperature >= 0) || !Double.isFinite(temperature)) {
            throw MtpException.invalidArgument("sampler: temperature = " + temperature + " must be finite and ≥ 0");
        }
        if (temperature > 0 && temperature < MIN_TEMPERATURE) {
            throw MtpException.invalidArgument("sampler: temperature = " + temperature + " is in (0, "
                    + MIN_TEMPERATURE + "): f32(1/T) times a log-prob overflows and the draw would not be the "
                    + "argmax; use 0 for greedy (spec §7)");
        }
        if (topK < 0) {
            throw MtpException.invalidArgument("sampler: top_k = " + topK + " must be ≥ 0 (0 disables it)");
        }
        if (!(topP > 0 && topP <= 1)) {
            throw MtpException.invalidArgument("sampler: top_p = " + topP + " must be in (0, 1] (1 disables it)");
        }
    }

    /** A stochastic sampler. */
    public static RowSampler of(double temperature, int topK, double topP, long seed) {
        return new RowSampler(temperature, topK, topP, seed);
    }

    public boolean isGreedy() {
        return temperature == 0.0;
    }

    /** "greedy", or "temperature 0.7, top-k 40, top-p 0.9, seed 5" (the parts that apply), for messages. */
    @Override
    public String toString() {
        if (isGreedy()) {
            return "greedy";
        }
        return "temperature " + temperature + (topK > 0 ? ", top-k " + topK : "") + (topP < 1 ? ", top-p " + topP : "")
                + ", seed " + seed;
    }
}
