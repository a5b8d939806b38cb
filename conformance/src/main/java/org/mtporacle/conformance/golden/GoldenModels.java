package org.mtporacle.conformance.golden;

import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.io.ModelLoader;

import java.nio.file.Path;
import java.util.Map;

/**
 * Which model and tolerance a golden trace is verified with (golden/README.md): the rules every caller of
 * {@link GoldenVerifier} shares, so a command only passes on what the user gave.
 */
public final class GoldenModels {
    private GoldenModels() {
    }

    /**
     * The model the golden was recorded on: {@code modelDir} when given, else the golden's fixture (built in
     * {@code fixtureCache}); models are shared through {@code cache}. The model's identity must be the golden's.
     *
     * @throws MtpException INVALID_ARGUMENT when the golden names a model directory and none is given;
     *                      INCOMPATIBLE_MODEL when the identities differ, saying how to re-record
     */
    public static MtpModel resolve(GoldenFiles.Golden g, Path modelDir, Path fixtureCache,
                                   Map<String, MtpModel> cache) {
        GoldenTrace.ModelRef ref = g.trace().model();
        MtpModel model;
        String source;
        if (modelDir != null) {
            source = "model " + modelDir;
            model = cache.computeIfAbsent("dir:" + modelDir, k -> ModelLoader.load(modelDir));
        } else if (ref.fixture() != null) {
            source = "fixture " + ref.fixture();
            model = cache.computeIfAbsent(ref.fixture(), k -> FixtureRecipe.named(k).load(fixtureCache));
        } else {
            throw MtpException.invalidArgument("golden " + g.file() + " was recorded on a model directory ("
                    + ref.path() + "), not a fixture: give --model DIR");
        }
        if (!model.identity().equals(ref.identity())) {
            throw MtpException.incompatibleModel("golden " + g.file() + ": " + source + " has identity "
                    + model.identity() + ", the golden was recorded on " + ref.identity()
                    + (ref.fixture() != null ? " (the recipe or writer changed; re-record with `mtp golden record "
                    + "--fixture " + ref.fixture() + "`)" : ""));
        }
        return model;
    }

    /**
     * The tolerance: {@code explicit} when given; else, with a backend, the tolerance of its profile for
     * {@code options}, an exact one read as {@code f32} because goldens hold the reference's scalar order, which a
     * backend (even the reference in vector mode) does not reproduce bit for bit; else the golden's own.
     *
     * @throws MtpException INVALID_ARGUMENT for an unknown profile name
     */
    public static Tolerance tolerance(String explicit, MtpBackend backend, Map<String, String> options,
                                      GoldenTrace trace) {
        return tolerance(explicit, backend, options, trace.options().tolerance());
    }

    /** As {@link #tolerance(String, MtpBackend, Map, GoldenTrace)}, for a golden whose own profile is {@code own}. */
    public static Tolerance tolerance(String explicit, MtpBackend backend, Map<String, String> options, String own) {
        if (explicit != null) {
            return Tolerance.named(explicit);
        }
        if (backend != null) {
            Tolerance t = BackendProfile.matching(backend.profiles(), options).tolerance();
            return t.exact() ? Tolerance.F32 : t;
        }
        return Tolerance.named(own);
    }
}
