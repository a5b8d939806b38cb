package org.mtporacle.reference.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.api.MtpWeights;

/** {@link Kernels#offHeap}: heap tensors move to native memory byte for byte; native ones are not copied. */
class OffHeapTest {
    @Test
    void heapTensorsAreCopiedByteForByteAndNativeOnesAreKept() {
        SplittableRandom rnd = new SplittableRandom(5);
        for (LinearWeight heap : new LinearWeight[] {TestWeights.dense(DType.BF16, 24, 64, rnd).weight(),
                TestWeights.affine(4, 32, 24, 64, rnd).weight()}) {
            LinearWeight moved = Kernels.offHeap(heap);
            assertThat(tensors(heap)[0].data().isNative()).as("test weights start on the heap").isFalse();
            HostTensor[] before = tensors(heap);
            HostTensor[] after = tensors(moved);
            for (int i = 0; i < before.length; i++) {
                assertThat(after[i].data().isNative()).isTrue();
                assertThat(after[i].dtype()).isEqualTo(before[i].dtype());
                assertThat(after[i].shape()).isEqualTo(before[i].shape());
                assertThat(after[i].data().toArray(ValueLayout.JAVA_BYTE))
                        .isEqualTo(before[i].data().toArray(ValueLayout.JAVA_BYTE));
            }
            assertThat(Kernels.offHeap(moved)).as("already native: the same object").isSameAs(moved);
        }
    }

    @Test
    void aMappedModelIsNotCopiedAndATiedHeadStaysTied() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(2 * 8 * 4);
            LinearWeight table = new LinearWeight.Dense(HostTensor.view(DType.BF16, new int[] {8, 4}, seg));
            assertThat(Kernels.offHeap(table)).isSameAs(table);
        }
        SplittableRandom rnd = new SplittableRandom(3);
        LinearWeight emb = TestWeights.dense(DType.BF16, 16, 8, rnd).weight();
        float[] g = new float[8];
        MtpWeights heap = new MtpWeights(lin(rnd), g, g, g, lin(rnd), lin(rnd), lin(rnd), lin(rnd), g, g, g, lin(rnd),
                lin(rnd), lin(rnd), g, emb, emb);
        MtpWeights w = Kernels.offHeap(heap);
        assertThat(w.head()).isSameAs(w.embedding());
        assertThat(((LinearWeight.Dense) w.head()).weight().data().isNative()).isTrue();
        assertThat(((LinearWeight.Dense) w.fc()).weight().data().isNative()).isTrue();
    }

    @Test
    void kernelResultsDoNotDependOnWhereTheWeightsLive() {
        SplittableRandom rnd = new SplittableRandom(9);
        float[] x = TestWeights.randomFloats(3 * 96, rnd);
        for (LinearWeight heap : new LinearWeight[] {TestWeights.dense(DType.BF16, 40, 96, rnd).weight(),
                TestWeights.affine(4, 32, 40, 96, rnd).weight()}) {
            try (Kernels k = new Kernels(KernelMode.VECTOR, 1)) {
                float[] a = new float[3 * 40];
                float[] b = new float[3 * 40];
                k.matmul(a, 0, heap, x, 0, 3);
                k.matmul(b, 0, Kernels.offHeap(heap), x, 0, 3);
                assertThat(b).isEqualTo(a);
            }
        }
    }

    private static LinearWeight lin(SplittableRandom rnd) {
        return TestWeights.dense(DType.BF16, 8, 8, rnd).weight();
    }

    private static HostTensor[] tensors(LinearWeight w) {
        return switch (w) {
            case LinearWeight.Dense d -> new HostTensor[] {d.weight()};
            case LinearWeight.Affine a -> new HostTensor[] {a.codes(), a.scales(), a.biases()};
        };
    }
}
