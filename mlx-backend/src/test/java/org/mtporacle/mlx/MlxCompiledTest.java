package org.mtporacle.mlx;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.MtpException;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxCompiled;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code mlx_compile} through an FFM upcall: values, one trace per input signature, failures as Java exceptions. */
class MlxCompiledTest {

    @Test
    void aCompiledGraphComputesWhatItsOpsComputeAndTracesOncePerSignature() {
        MlxTestSupport.onMlx(ops -> {
            // (a · b + a) · sigmoid(0) = (a · b + a) / 2, by hand below
            try (MlxCompiled f = new MlxCompiled(ops, "test", (o, in) -> {
                MlxArray a = in.get(0);
                MlxArray b = in.get(1);
                MlxArray half = o.sigmoid(o.subtract(a, a));
                return List.of(o.multiply(o.add(o.multiply(a, b), a), half), o.add(a, b));
            })) {
                float[] a = {1, 2, 3, -4};
                float[] b = {0.5f, -1, 2, 0.25f};
                List<MlxArray> out = f.apply(ops, List.of(ops.fromFloats(a, 4), ops.fromFloats(b, 4)));
                assertThat(ops.toFloats(out.get(0))).containsExactly(0.75f, 0f, 4.5f, -2.5f);
                assertThat(ops.toFloats(out.get(1))).containsExactly(1.5f, 1, 5, -3.75f);
                f.apply(ops, List.of(ops.fromFloats(b, 4), ops.fromFloats(a, 4)));
                assertThat(f.traces()).as("same shapes: replayed, not traced again").isEqualTo(1);
                List<MlxArray> two = f.apply(ops, List.of(ops.fromFloats(new float[] {2, 4}, 2),
                        ops.fromFloats(new float[] {3, 5}, 2)));
                assertThat(ops.toFloats(two.get(1))).containsExactly(5, 9);
                assertThat(f.traces()).as("a new shape is a new trace").isEqualTo(2);
            }
        });
    }

    @Test
    void anExceptionInsideTheTraceComesBackAsAJavaExceptionAndTheJvmLives() {
        MlxTestSupport.onMlx(ops -> {
            try (MlxCompiled f = new MlxCompiled(ops, "bad", (o, in) ->
                    List.of(o.matmul(in.get(0), in.get(1))))) { // [2] · [3]: MLX refuses the shapes
                assertThatThrownBy(() -> f.apply(ops, List.of(ops.fromFloats(new float[2], 1, 2),
                        ops.fromFloats(new float[3], 1, 3)))).isInstanceOf(MtpException.class);
                // and a good signature still works afterwards
                List<MlxArray> ok = f.apply(ops, List.of(ops.fromFloats(new float[] {1, 2}, 1, 2),
                        ops.fromFloats(new float[] {3, 4}, 2, 1)));
                assertThat(ops.toFloats(ok.getFirst())).containsExactly(11);
            }
            try (MlxCompiled g = new MlxCompiled(ops, "throws", (o, in) -> {
                throw new IllegalStateException("from the graph function");
            })) {
                assertThatThrownBy(() -> g.apply(ops, List.of(ops.fromFloats(new float[1], 1))))
                        .isInstanceOf(IllegalStateException.class).hasMessage("from the graph function");
            }
        });
    }

    @Test
    void aClosedCompiledGraphRefusesInJava() {
        MlxTestSupport.onMlx(ops -> {
            MlxCompiled f = new MlxCompiled(ops, "closed", (o, in) -> List.of(o.add(in.get(0), in.get(0))));
            f.close();
            f.close(); // idempotent
            assertThatThrownBy(() -> f.apply(ops, List.of(ops.fromFloats(new float[1], 1))))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        });
    }
}
