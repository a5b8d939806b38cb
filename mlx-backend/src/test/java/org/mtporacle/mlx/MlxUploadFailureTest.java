package org.mtporacle.mlx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.conformance.FixtureRecipe;

/** A model whose upload fails part-way frees every array it had already put on the device. */
class MlxUploadFailureTest {
    /** As in {@link MlxMemorySoakTest}: room for one small buffer of allocator noise. */
    static final long SLACK_BYTES = 16 * 1024;

    @Test
    void aFailedUploadLeavesNoDeviceMemoryBehind() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        MtpModel good = FixtureRecipe.named("tiny").load(MlxTestSupport.fixtureCache());
        MtpWeights w = good.weights();
        // The last gain is missing: every linear and the other six gains are on the device when the upload fails.
        MtpWeights broken = new MtpWeights(w.fc(), w.preFcNormEmbedding(), w.preFcNormHidden(), w.inputNorm(),
                w.qProj(), w.kProj(), w.vProj(), w.oProj(), w.qNorm(), w.kNorm(), w.postAttentionNorm(), w.gateProj(),
                w.upProj(), w.downProj(), null, w.embedding(), w.head());
        MtpModel bad = new MtpModel(good.config(), broken, good.identity(), "test: final norm missing", good.layout(),
                List.of());
        try (MlxDraftModel keep = backend.load(good, Map.of("device", "cpu"))) {
            long before = keep.library().activeMemory();
            for (int i = 0; i < 3; i++) {
                assertThatThrownBy(() -> backend.load(bad, Map.of("device", "cpu")))
                        .isInstanceOf(NullPointerException.class);
            }
            long growth = keep.library().activeMemory() - before;
            assertThat(growth).as("active memory growth after 3 failed uploads of the tiny model")
                    .isLessThanOrEqualTo(SLACK_BYTES);
        }
    }
}
