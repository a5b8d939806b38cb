package org.mtporacle.conformance.compare;

import java.util.Locale;

/**
 * The token allowance a campaign's data implies (conformance/SPEC.md, "Deriving the near-tie allowance").
 *
 * <p>A backend's log-probs carry an error; at a greedy position where the reference's choice leads the runner-up by
 * {@code g}, the backend drafts another token when the error of that difference, {@code δ}, exceeds {@code g}:
 * {@code P(differ | g) = S(g) = P(δ > g)}. Two shapes of {@code δ} are fitted by maximum likelihood to the
 * {@link GapHistogram} (every agreeing and differing position is one Bernoulli trial at its gap): a normal error,
 * {@code S(g) = ½·erfc(g / (σ√2))}, and a heavier-tailed Laplace error, {@code S(g) = ½·e^(−g/b)}.
 *
 * <p>A conforming backend fails a campaign when it differs at a gap above the allowance {@code A}. With {@code ρ} the
 * density of reference gaps near zero (positions per unit log-prob, per position) and {@code M} positions in the
 * campaign, the expected number of such failures is {@code E(A) = M·ρ·∫_A^∞ S(g) dg}; {@link #allowance} solves
 * {@code E(A) = p} for the shape that fits the data better (the larger likelihood).
 */
public final class GapCalibration {
    /** The campaign the reports size the implied allowance for: this many chains like the ones measured. */
    public static final int CAMPAIGN_CHAINS = 10_000;
    /** The expected number of false failures of a conforming backend the implied allowance admits in that campaign. */
    public static final double EXPECTED_FALSE_FAILURES = 1e-3;

    /** Gaps below this estimate the near-zero density {@code ρ}. */
    static final double DENSITY_RANGE = 0.25;

    /** One fitted error shape: its name, scale (σ or b) and log-likelihood. */
    public record Fit(String shape, double scale, double logLikelihood) {
    }

    private final GapHistogram data;
    private final Fit normal;
    private final Fit laplace;
    private final double density;

    private GapCalibration(GapHistogram data) {
        this.data = data.copy();
        this.normal = fit(data, "normal");
        this.laplace = fit(data, "laplace");
        long near = 0;
        long[] a = data.agreeCounts();
        long[] d = data.differCounts();
        for (int i = 0; i < GapHistogram.BINS && GapHistogram.centre(i) < DENSITY_RANGE; i++) {
            near += a[i] + d[i];
        }
        this.density = data.positions() == 0 ? 0 : near / (DENSITY_RANGE * data.positions());
    }

    /** Fits both shapes to {@code data}; with no differing position both scales are 0. */
    public static GapCalibration of(GapHistogram data) {
        return new GapCalibration(data);
    }

    public Fit normal() {
        return normal;
    }

    public Fit laplace() {
        return laplace;
    }

    /** {@code ρ}: reference gaps near zero per unit log-prob, per position. */
    public double density() {
        return density;
    }

    public GapHistogram data() {
        return data.copy();
    }

    /** The fitted shape with the larger likelihood (the normal one on a tie). */
    public Fit best() {
        return laplace.logLikelihood() > normal.logLikelihood() ? laplace : normal;
    }

    /**
     * The smallest allowance {@code A} with {@code E(A) ≤ expectedFailures} over a campaign of {@code positions}
     * greedy positions, under the better-fitting shape; 0 when no position differed.
     */
    public double allowance(double positions, double expectedFailures) {
        return allowance(best(), positions, expectedFailures);
    }

    /** {@link #allowance(double, double)} for one shape. */
    double allowance(Fit f, double positions, double expectedFailures) {
        if (f.scale() == 0) {
            return 0;
        }
        double lo = 0;
        double hi = 10;
        for (int i = 0; i < 100; i++) {
            double mid = (lo + hi) / 2;
            if (positions * density * tailIntegral(f, mid) > expectedFailures) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return hi;
    }

    /** {@code ∫_A^∞ S(g) dg} in closed form. */
    static double tailIntegral(Fit f, double a) {
        double s = f.scale();
        if (f.shape().equals("laplace")) {
            return 0.5 * s * StrictMath.exp(-a / s);
        }
        double z = a / s;
        double pdf = StrictMath.exp(-z * z / 2) / StrictMath.sqrt(2 * StrictMath.PI);
        return s * (pdf - z * 0.5 * erfc(z / StrictMath.sqrt(2)));
    }

    /** {@code S(g)} of a shape at scale {@code s}. */
    static double survival(String shape, double s, double g) {
        return shape.equals("laplace") ? 0.5 * StrictMath.exp(-g / s) : 0.5 * erfc(g / (s * StrictMath.sqrt(2)));
    }

    /** Maximum likelihood by golden-section search on {@code log s} over {@code [1e−6, 10]}. */
    static Fit fit(GapHistogram h, String shape) {
        if (h.differing() == 0) {
            return new Fit(shape, 0, 0);
        }
        double lo = StrictMath.log(1e-6);
        double hi = StrictMath.log(10);
        double phi = (StrictMath.sqrt(5) - 1) / 2;
        double x1 = hi - phi * (hi - lo);
        double x2 = lo + phi * (hi - lo);
        double f1 = logLikelihood(h, shape, StrictMath.exp(x1));
        double f2 = logLikelihood(h, shape, StrictMath.exp(x2));
        for (int i = 0; i < 200; i++) {
            if (f1 < f2) {
                lo = x1;
                x1 = x2;
                f1 = f2;
                x2 = lo + phi * (hi - lo);
                f2 = logLikelihood(h, shape, StrictMath.exp(x2));
            } else {
                hi = x2;
                x2 = x1;
                f2 = f1;
                x1 = hi - phi * (hi - lo);
                f1 = logLikelihood(h, shape, StrictMath.exp(x1));
            }
        }
        double s = StrictMath.exp((lo + hi) / 2);
        return new Fit(shape, s, logLikelihood(h, shape, s));
    }

    /** {@code Σ differ·log S(g) + agree·log(1 − S(g))} over bin centres; the overflow counts sit at {@code RANGE}. */
    static double logLikelihood(GapHistogram h, String shape, double s) {
        long[] a = h.agreeCounts();
        long[] d = h.differCounts();
        double ll = 0;
        for (int i = 0; i < GapHistogram.BINS; i++) {
            ll += term(a[i], d[i], survival(shape, s, GapHistogram.centre(i)));
        }
        return ll + term(h.agreeBeyond(), h.differBeyond(), survival(shape, s, GapHistogram.RANGE));
    }

    private static double term(long agree, long differ, double p) {
        double q = Math.max(p, 1e-300);
        double r = Math.max(1 - p, 1e-300);
        return (differ == 0 ? 0 : differ * StrictMath.log(q)) + (agree == 0 ? 0 : agree * StrictMath.log(r));
    }

    /**
     * The complementary error function, with fractional error below 1.2e-7 everywhere (the Chebyshev fit of
     * Numerical Recipes' {@code erfcc}); ample for fitting and for tails of a few standard deviations.
     */
    static double erfc(double x) {
        double z = Math.abs(x);
        double t = 1 / (1 + 0.5 * z);
        double ans = t * StrictMath.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
                + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223
                + t * 0.17087277)))))))));
        return x >= 0 ? ans : 2 - ans;
    }

    /** One line for reports. */
    public String describe(double positions, double expectedFailures) {
        return String.format(Locale.ROOT, "%d greedy positions, %d differing (largest gap %.4f); fitted error "
                        + "σ=%.4g (normal, log-lik %.1f), b=%.4g (Laplace, log-lik %.1f); near-zero gap density %.3g; "
                        + "implied allowance %.4f (%s; normal %.4f, Laplace %.4f) for %.3g positions at %.0e expected "
                        + "false failures", data.positions(), data.differing(), data.maxDifferGap(), normal.scale(),
                normal.logLikelihood(), laplace.scale(), laplace.logLikelihood(), density,
                allowance(positions, expectedFailures), best().shape(),
                allowance(normal, positions, expectedFailures), allowance(laplace, positions, expectedFailures),
                positions, expectedFailures);
    }
}
