package org.mtporacle.mlx;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.conformance.FixtureRecipe;
import org.mtporacle.mlx.ffi.MlxC;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxDiscovery;
import org.mtporacle.mlx.handle.MlxLibrary;
import org.mtporacle.mlx.handle.MlxOps;
import org.mtporacle.mlx.handle.MlxScope;
import org.mtporacle.mlx.handle.MlxStream;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The FFM layer: error handler, handle lifetimes, argument checks before native code, discovery. */
class MlxBindingsTest {

    private static MlxLibrary library() {
        MlxTestSupport.requireMlx();
        return MlxLibrary.load(MlxDiscovery.fromEnvironment());
    }

    private static void onMlx(MlxLibrary lib, java.util.function.Consumer<MlxOps> work) {
        try (MlxStream stream = MlxStream.open(lib, false)) {
            lib.thread().run(() -> {
                try (MlxScope scope = new MlxScope(lib)) {
                    work.accept(new MlxOps(stream, scope));
                }
            });
        }
    }

    @Test
    void theErrorHandlerTurnsABadMatmulIntoABackendFailureWithTheNativeText() {
        MlxLibrary lib = library();
        onMlx(lib, ops -> {
            MlxArray a = ops.fromFloats(new float[6], 2, 3);
            MlxArray b = ops.fromFloats(new float[20], 4, 5);
            assertThatThrownBy(() -> ops.eval(ops.matmul(a, b)))
                    .isInstanceOfSatisfying(MtpException.class, e -> {
                        assertThat(e.kind()).isEqualTo(MtpException.Kind.BACKEND_FAILURE);
                        assertThat(e.getMessage()).startsWith("mlx_matmul failed (status 1): ")
                                .containsIgnoringCase("matmul");
                        System.out.println("native error surfaced as: " + e.getMessage());
                    });
            // the library keeps working afterwards
            float[] ok = ops.toFloats(ops.matmul(a, ops.fromFloats(new float[] {1, 0, 0, 1, 0, 0}, 3, 2)));
            assertThat(ok).hasSize(4);
        });
    }

    @Test
    void theLoadedVersionIsOneTheBindingsAccept() {
        MlxLibrary lib = library();
        System.out.println("MLX " + lib.version() + (lib.versionNote() == null ? " (tested)" : " (" + lib.versionNote()
                + ")"));
        assertThat(lib.version()).matches("\\d+\\.\\d+\\.\\d+.*");
        assertThat(lib.versionNote() == null).isEqualTo(MlxLibrary.TESTED_MLX.contains(lib.version()));
    }

    @Test
    void arraysAreFreedExactlyOnceAndUseAfterFreeFailsInJava() {
        MlxLibrary lib = library();
        onMlx(lib, ops -> {
            MlxArray kept = ops.scope().release(ops.fromFloats(new float[] {1, 2, 3}, 3));
            MlxArray owned = ops.fromFloats(new float[] {4, 5}, 2);
            int before = ops.scope().size();
            owned.close();
            owned.close(); // second close is a no-op
            assertThat(owned.isFreed()).isTrue();
            assertThat(ops.scope().size()).isEqualTo(before - 1);
            assertThatThrownBy(() -> ops.add(owned, owned)).isInstanceOf(MtpException.class)
                    .hasMessageContaining("freed");
            assertThat(ops.toFloats(kept)).containsExactly(1, 2, 3);
            kept.close();
            kept.close();
            assertThat(kept.isFreed()).isTrue();
        });
    }

    @Test
    void scopesFreeTheirArraysInReverseOrderOnClose() {
        MlxLibrary lib = library();
        MlxArray[] made = new MlxArray[2];
        onMlx(lib, ops -> {
            made[0] = ops.zeros(MlxC.MLX_FLOAT32, 2, 2);
            made[1] = ops.add(made[0], made[0]);
        });
        assertThat(made[0].isFreed()).isTrue();
        assertThat(made[1].isFreed()).isTrue();
    }

    @Test
    void badArgumentsAreRejectedBeforeNativeCode() {
        MlxLibrary lib = library();
        onMlx(lib, ops -> {
            MlxArray a = ops.fromFloats(new float[6], 2, 3);
            assertInvalid(() -> ops.reshape(a, 4, 2));
            assertInvalid(() -> ops.reshape(a, -1, 6));
            assertInvalid(() -> ops.slice(a, new int[] {0, 0}, new int[] {3, 3}));
            assertInvalid(() -> ops.slice(a, new int[] {0}, new int[] {2}));
            assertInvalid(() -> ops.sliceUpdate(a, ops.fromFloats(new float[2], 2), new int[] {0, 0},
                    new int[] {2, 1}));
            assertInvalid(() -> ops.transpose(a, 0, 0));
            assertInvalid(() -> ops.fromFloats(new float[5], 2, 3));
            assertInvalid(() -> ops.zeros(MlxC.MLX_FLOAT32, 2, -1));
            assertInvalid(() -> ops.argmax(a, 2, false));
            assertInvalid(() -> ops.rmsNorm(a, a, Float.NaN));
            assertInvalid(() -> ops.quantizedMatmul(a, a, a, a, 48, 4));
            assertInvalid(() -> ops.concatenate(List.of(), 0));
            assertInvalid(() -> ops.uniform(ops.fromInts(new int[] {1, 2}, 2), 1)); // a key is uint32
            assertInvalid(() -> ops.uniform(ops.fromUints(new int[] {1, 2, 3, 4}, 2, 2), 1)); // one key only
            assertInvalid(() -> ops.where(a, a, a)); // the condition must be bool
            assertInvalid(() -> ops.takeAlong(a, ops.fromInts(new int[] {0, 1}, 2), -1));
            assertInvalid(() -> ops.cumsum(a, 2, true));
            assertInvalid(() -> ops.argsort(a, -3));
        });
    }

    private static void assertInvalid(Runnable r) {
        assertThatThrownBy(r::run).isInstanceOfSatisfying(MtpException.class,
                e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT));
    }

    @Test
    void unknownOptionsAndBadValuesAreInvalidArguments() {
        MlxBackend backend = MlxTestSupport.requireMlx();
        MtpModel model = FixtureRecipe.named("tiny").load(MlxTestSupport.fixtureCache());
        for (Map<String, String> bad : List.of(Map.of("colour", "red"), Map.of("precision", "f16"),
                Map.of("device", "tpu"), Map.of("compile", "yes"))) {
            assertThatThrownBy(() -> backend.load(model, bad)).isInstanceOfSatisfying(MtpException.class,
                    e -> assertThat(e.kind()).isEqualTo(MtpException.Kind.INVALID_ARGUMENT));
        }
    }

    @Test
    void aMissingLibraryIsReportedWithHowToFixIt() {
        // runs without MLX: discovery alone
        MlxDiscovery nowhere = new MlxDiscovery(null, null, List.of(Path.of("target", "no-such-dir")));
        assertThatThrownBy(nowhere::locate).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.UNAVAILABLE);
            assertThat(e.getMessage()).contains("MTP_MLX_LIBRARY").contains("brew install mlx-c")
                    .contains(MlxDiscovery.libraryName());
        });
        MlxDiscovery named = new MlxDiscovery(Path.of("target", "missing", "libmlxc.so"), "MTP_MLX_LIBRARY",
                List.of());
        assertThatThrownBy(named::locate).isInstanceOfSatisfying(MtpException.class, e -> {
            assertThat(e.kind()).isEqualTo(MtpException.Kind.UNAVAILABLE);
            assertThat(e.getMessage()).contains("MTP_MLX_LIBRARY names").contains("not a file");
        });
    }

    @Test
    void theBackendIsRegisteredUnderItsName() {
        assertThat(org.mtporacle.api.MtpBackends.byName("mlx")).isInstanceOf(MlxBackend.class);
    }
}
