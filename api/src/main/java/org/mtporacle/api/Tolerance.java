package org.mtporacle.api;

import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * How closely a backend must follow the reference (conformance/SPEC.md, "Tolerance profiles"): a name and three
 * thresholds. Tensors compare by NMSE {@code Σ(a−b)²/Σb²}; a differing draft token passes only as a near-tie whose
 * gap is at most {@code tokenGap} (greedy rows: the reference's log-prob gap between its own choice and the other
 * token; seeded rows: twice the smallest per-token log-prob perturbation under which the reference's draw picks it).
 *
 * <p>A profile is data: a backend declares one per configuration in its {@link BackendProfile} (built-in or its own),
 * the wire handshake carries one, and every report prints its thresholds. Any profile has a well-formed name and
 * finite, non-negative thresholds; a profile a backend <em>declares</em> ({@link #checkDeclarable}) may also be no
 * looser than {@link #CEILING}, threshold by threshold, and a built-in name means exactly the built-in values.
 *
 * @param name       the profile's name, printed in reports: letters, digits and {@code . _ + -}, 1 to 64 characters
 * @param tokenGap   near-tie bound, in log-prob units
 * @param kvNmse     bound on the NMSE of checkpoint keys and values
 * @param hiddenNmse bound on the NMSE of checkpoint hiddens
 */
public record Tolerance(String name, double tokenGap, double kvNmse, double hiddenNmse) {
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._+-]{1,64}");

    /** Reference against reference: bit-identical. */
    public static final Tolerance EXACT = new Tolerance("exact", 0, 0, 0);

    /**
     * A backend computing in f32 from the same weights (a different accumulation order only). The hidden bound is 0
     * because a retained hidden is a copy of the caller's bf16-exact context.
     */
    public static final Tolerance F32 = new Tolerance("f32", 1e-4, 1e-9, 0);

    /**
     * A backend computing activations in bf16 (MLX "native" precision on bf16 weights, spec §10.2.11): bf16 keeps 8
     * significant bits, so per-element errors near 2^-9 relative give NMSE around 1e-5 after a few layers; a bf16
     * backend may round the retained hidden, hence 1e-5. The token gap is derived from measured data
     * (conformance/SPEC.md, "Deriving the near-tie allowance"): MLX's log-prob error on the bundled fixtures, CPU and
     * GPU, fits a normal error of σ 0.022–0.029, which needs 0.11–0.146 for a 10,000-chain campaign to fail a
     * conforming backend with probability about 1e-3.
     */
    public static final Tolerance BF16 = new Tolerance("bf16", 0.15, 2e-3, 1e-5);

    /** The built-in profiles, tightest first. */
    public static final List<Tolerance> BUILT_IN = List.of(EXACT, F32, BF16);

    /** The loosest thresholds a backend may declare: a declared profile may only tighten these. */
    public static final Tolerance CEILING = BF16;

    public Tolerance {
        if (name == null || !NAME.matcher(name).matches()) {
            throw MtpException.invalidArgument("tolerance: name " + (name == null ? "null" : "'" + printable(name)
                    + "'") + " is not 1 to 64 letters, digits or . _ + - (conformance/SPEC.md, Tolerance profiles)");
        }
        threshold(name, "tokenGap", tokenGap);
        threshold(name, "kvNmse", kvNmse);
        threshold(name, "hiddenNmse", hiddenNmse);
    }

    private static void threshold(String profile, String field, double v) {
        if (!Double.isFinite(v) || v < 0) {
            throw MtpException.invalidArgument("tolerance " + profile + ": " + field + " = " + v + ", expected a "
                    + "finite number >= 0 (conformance/SPEC.md, Tolerance profiles)");
        }
    }

    /** The built-in profile called {@code name}; INVALID_ARGUMENT naming the known ones otherwise. */
    public static Tolerance named(String name) {
        for (Tolerance t : BUILT_IN) {
            if (t.name.equals(name)) {
                return t;
            }
        }
        throw MtpException.invalidArgument("tolerance: unknown profile '" + printable(String.valueOf(name))
                + "' (built in: " + String.join(", ", BUILT_IN.stream().map(Tolerance::name).toList()) + ")");
    }

    /**
     * The router near-tie bound in probability units (spec §12.5, conformance/SPEC.md "Router choices"): a quarter of
     * the token gap, since a probability {@code p ≤ 1/2} at a top-k boundary moves by at most {@code p·Δlog p}
     * ({@code exact} 0, {@code f32} 2.5e-5, {@code bf16} 0.02).
     */
    public double routerGap() {
        return tokenGap / 4;
    }

    /** True when every threshold is 0: checkpoints must match bit for bit (by digest where only digests exist). */
    public boolean exact() {
        return tokenGap == 0 && kvNmse == 0 && hiddenNmse == 0;
    }

    /** True when no threshold of this profile is looser than {@code other}'s. */
    public boolean atMost(Tolerance other) {
        return tokenGap <= other.tokenGap && kvNmse <= other.kvNmse && hiddenNmse <= other.hiddenNmse;
    }

    /**
     * Checks that a backend may declare this profile: a built-in name carries the built-in values, and no threshold
     * exceeds {@link #CEILING}'s. {@code who} names the declaring side in the message.
     *
     * @throws MtpException INVALID_ARGUMENT naming the profile, the threshold and both values
     */
    public Tolerance checkDeclarable(String who) {
        for (Tolerance t : BUILT_IN) {
            if (t.name.equals(name) && !t.equals(this)) {
                throw MtpException.invalidArgument(who + ": profile '" + name + "' is built in as " + t.describe()
                        + ", declared as " + describe() + "; give a custom profile its own name");
            }
        }
        if (!atMost(CEILING)) {
            throw MtpException.invalidArgument(who + ": profile " + describe() + " is looser than the loosest "
                    + "built-in profile " + CEILING.describe() + "; a backend may only tighten it (conformance/SPEC.md,"
                    + " Tolerance profiles)");
        }
        return this;
    }

    /** The name and every threshold, e.g. {@code f32 (token gap 0.0001, K/V NMSE 1E-9, hidden NMSE 0)}. */
    public String describe() {
        return name + " (" + thresholds() + ")";
    }

    /** The thresholds in one line, each the shortest decimal of its double. */
    public String thresholds() {
        return "token gap " + number(tokenGap) + ", K/V NMSE " + number(kvNmse) + ", hidden NMSE "
                + number(hiddenNmse);
    }

    private static String number(double v) {
        return v == 0 ? "0" : java.math.BigDecimal.valueOf(v).stripTrailingZeros().toString();
    }

    private static String printable(String s) {
        StringBuilder b = new StringBuilder();
        s.codePoints().limit(80).forEach(c -> {
            if (c >= 0x20 && c < 0x7f && c != '\\') {
                b.appendCodePoint(c);
            } else {
                b.append(String.format(Locale.ROOT, "\\u%04x", c));
            }
        });
        return b.toString();
    }
}
