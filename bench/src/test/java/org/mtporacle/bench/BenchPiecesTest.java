package org.mtporacle.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Set;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.Test;
import org.mtporacle.api.TargetModel;
import org.mtporacle.reference.fixture.FixtureModels;
import org.mtporacle.reference.fixture.TargetFixtures;

/** The arithmetic behind the benchmark's floors and verdicts, checked against hand-derived values. */
class BenchPiecesTest {
    @Test
    void draftStepFlopsCountEveryLinearAndTheHeadFromThePresetShape() {
        FixtureModels.Preset p = FixtureModels.preset("tiny");
        long h = p.hiddenSize();
        long q = (long) p.numHeads() * p.headDim();
        long kv = (long) p.numKvHeads() * p.headDim();
        long i = p.intermediateSize();
        // fc [H,2H], q_proj [2·nH·D, H], k/v [nKV·D, H], o [H, nH·D], gate/up [I,H], down [H,I], head [V,H]
        long macs = 2 * h * h + 2 * q * h + 2 * kv * h + h * q + 3 * i * h + (long) p.vocabSize() * h;
        try (Arena arena = Arena.ofConfined()) {
            DraftStepBench d = new DraftStepBench(arena, p);
            assertThat(d.flops(1, 0)).isEqualTo(2.0 * macs);
            assertThat(d.flops(8, 0)).isEqualTo(16.0 * macs);
        }
    }

    @Test
    void aMoeDraftStepCountsTheRouterTheChosenExpertsTheSharedExpertAndTheHead() {
        FixtureModels.Preset p = FixtureModels.preset("tiny-moe");
        long h = p.hiddenSize();
        long q = (long) p.numHeads() * p.headDim();
        long kv = (long) p.numKvHeads() * p.headDim();
        long i = p.intermediateSize();
        int k = p.moe().topK();
        long e = p.moe().numExperts();
        long s = p.moe().sharedWidth();
        // fc, q, k, v, o; router [E,H], shared expert 3·[S,H], shared gate [1,H]; K experts 3·[I,H]; head [V,H]
        long common = 2 * h * h + 2 * q * h + 2 * kv * h + h * q + e * h + 3 * s * h + h + (long) p.vocabSize() * h;
        try (Arena arena = Arena.ofConfined()) {
            DraftStepBench d = new DraftStepBench(arena, p);
            assertThat(d.flops(1, 4)).isEqualTo(2.0 * (common + 3L * k * i * h));
            assertThat(d.flops(8, 4)).isEqualTo(16.0 * (common + 3L * k * i * h));
            assertThat(d.chosenExperts(1, 4)).hasSize(k);
            int union = d.chosenExperts(8, 4).size();
            assertThat(union).isBetween(k, (int) e);
            // BF16 weights: 2 bytes each; the union's experts read once; one embedding row per row
            assertThat(d.weightBytes(8, 4)).isEqualTo(2 * (common + 3L * union * i * h) + 8 * 2 * h);
        }
    }

    @Test
    void fmaPeakCountsTwoFlopsPerLanePerChainStep() {
        try (FmaPeak f = new FmaPeak(2, 1000)) {
            assertThat(f.flops()).isEqualTo(2.0 * 2 * 1000 * 12 * FloatVector.SPECIES_PREFERRED.length());
            f.run(); // completes, and its NaN guard does not fire on settled chains
        }
        assertThatThrownBy(() -> new FmaPeak(0, 10)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("threads = 0");
    }

    @Test
    void aTargetBelowTheComputeFloorIsReportedAsUnreachable() {
        // 4 GFLOP at 100 GFLOP/s take 40 ms; against a 25 ms bandwidth floor that is 1.6×.
        assertThat(KernelBench.unreachable(8, 1, 1.35, 0.025, 4e9, 100)).hasValueSatisfying(n -> assertThat(n)
                .contains("B=8, 1 thread(s)").contains("≤1.35×").contains("1.60×").contains("4.00 GFLOP"));
        // 4 GFLOP at 200 GFLOP/s take 20 ms: 0.8× the floor, so 1.35× is reachable in principle.
        assertThat(KernelBench.unreachable(8, 2, 1.35, 0.025, 4e9, 200)).isEmpty();
        // A target above the compute floor is not reported either.
        assertThat(KernelBench.unreachable(8, 1, 1.7, 0.025, 4e9, 100)).isEmpty();
    }

    @Test
    void onlyNamesTheMeasuredPartsAndRejectsUnknownOnes() {
        BenchOptions o = BenchOptions.parse(List.of("--quick", "--only", "draft,prefill"));
        assertThat(o.measures("draft")).isTrue();
        assertThat(o.measures("prefill")).isTrue();
        assertThat(o.measures("matvec")).isFalse();
        assertThat(BenchOptions.defaults().parts()).containsExactlyInAnyOrderElementsOf(BenchOptions.PARTS);
        assertThatThrownBy(() -> BenchOptions.parse(List.of("--only", "matvec,gemm")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unknown part 'gemm'");
        assertThatThrownBy(() -> BenchOptions.defaults().withParts(List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no part");
    }

    @Test
    void comparedRowsCarryARatioButNoVerdict() {
        BenchReport r = new BenchReport("k", "c", "o", List.of(
                BenchReport.Row.compared("floor", 1, 0.04, "GFLOP/s", 100, 1.6, "bandwidth floor"),
                BenchReport.Row.atMost("step", 1, 0.09, "GB/s", 6, 3.6, "bandwidth floor", 1.35)), List.of());
        assertThat(r.rows().get(0).status()).isEmpty();
        assertThat(r.rows().get(0).target()).isNull();
        assertThat(r.rows().get(1).status()).isEqualTo("MISS");
        assertThat(r.toTable()).contains("targets: 0 PASS, 1 MISS").containsPattern("floor\\s+1\\s+40\\.000.*1\\.600");
    }

    @Test
    void theVerifyFloorCountsEveryLayerTheHeadTheEmbeddingRowsTheStatesAndTheCachesByHand() {
        // tiny-target: H 64, 4 layers (GDN ×3, attention), V 512 tied, attention 4/2 heads × 16, GDN 2/4 heads × 16,
        // conv K 4, MLP 128; BF16 linears (2 bytes), f32 states and caches (4 bytes).
        TargetModel m = BenchTargets.distinct(TargetFixtures.preset("tiny-target"), 1);
        long convDim = 2 * 2 * 16 + 4 * 16; // q | k | v = 128
        long gdn = convDim * 64 + 64 * 64 + 4 * 64 + 4 * 64 + 64 * 64; // in_proj_qkv, z, b, a, out_proj
        long attention = 2 * 4 * 16 * 64 + 2 * 16 * 64 + 2 * 16 * 64 + 64 * 4 * 16; // q (query | gate), k, v, o
        long mlp = 3 * 128 * 64;
        long head = 512 * 64;
        int b = 2;
        int w = 4;
        int history = 16;
        BenchTargets.VerifyBytes v = BenchTargets.verifyBytes(m, b, w, history, null);
        assertThat(v.weights()).isEqualTo(2 * (3 * (gdn + mlp) + attention + mlp + head + (long) b * w * 64));
        long state = 4 * 16 * 16 + convDim * 3; // recurrent state [Hv, Dk, Dv] and conv window [C, K−1] per row
        assertThat(v.states()).isEqualTo(2 * 4 * b * 3 * state); // read once and written once, 3 GDN layers
        assertThat(v.caches()).isEqualTo(4L * b * 2 * (2 * 16) * (history + 2 * w)); // K and V: read P + w, write w
        assertThat(v.total()).isEqualTo(v.weights() + v.states() + v.caches());
        assertThat(BenchTargets.linearFlops(m, 4)).isEqualTo(2.0 * 4 * (3 * (gdn + mlp) + attention + mlp + head));
    }

    @Test
    void aMoeTargetsFloorCountsOnlyTheExpertsTheVerifyChose() {
        // tiny-moe-target: 8 experts of width 32, top 2, shared expert 32; layer l chose experts {l, 7}
        TargetModel m = BenchTargets.distinct(TargetFixtures.preset("tiny-moe-target"), 1);
        List<Set<Integer>> chosen = List.of(Set.of(0, 7), Set.of(1, 7), Set.of(2, 7), Set.of(3, 7));
        long expert = 3 * 32 * 64;
        long all = BenchTargets.verifyBytes(m, 1, 4, 0, null).weights();
        long two = BenchTargets.verifyBytes(m, 1, 4, 0, chosen).weights();
        assertThat(all - two).isEqualTo(2L * 4 * (8 - 2) * expert); // 6 experts fewer in each of 4 layers
        assertThat(BenchTargets.weightSegments(m, chosen).stream().mapToLong(MemorySegment::byteSize).sum())
                .isEqualTo(two - 2L * 4 * 64); // the read covers the weights but not the embedding rows
    }

    @Test
    void theLargeTargetEstimateScalesTheIntervalWithoutTheHeadByTheLayerCount() {
        // 64 layers: the head once, 16 intervals of 4 layers (each interval's time less the head in it)
        assertThat(TargetEstimate.wholeModel(0.1, 0.4, 64)).isCloseTo(0.1 + 16 * 0.3, within(1e-12));
        assertThat(TargetEstimate.wholeModel(100, 100, 40)).isEqualTo(100);
        assertThat(TargetEstimate.wholeModel(1, 3, 4)).isEqualTo(3);
    }
}
