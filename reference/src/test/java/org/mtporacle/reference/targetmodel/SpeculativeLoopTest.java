package org.mtporacle.reference.targetmodel;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.mtporacle.api.DType;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowSampler;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.TestModels;
import org.mtporacle.reference.kernels.KernelMode;
import org.mtporacle.reference.kernels.Kernels;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Output independence (spec §10.1.10): speculative decoding emits exactly the target's own sampled stream, whatever
 * the draft depth, batch composition, join times, tap and sampler.
 */
class SpeculativeLoopTest {
    /** A vocabulary this small makes random drafts agree with the target often, so acceptance paths run. */
    private static final MtpConfig SMALL_VOCAB = new MtpConfig(64, 4, 2, 16, 4, 1e7, 1e-6, 8, 128);

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (ReferenceTarget.Tap tap : ReferenceTarget.Tap.values()) {
            for (int depth : new int[] {0, 1, 3, 5}) {
                out.add(Arguments.of(tap, depth, "greedy"));
                out.add(Arguments.of(tap, depth, "seeded"));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} tap, depth {1}, {2}")
    @MethodSource("cases")
    void speculativeOutputEqualsPlainDecoding(ReferenceTarget.Tap tap, int depth, String sampling) {
        MtpModel model = TestModels.random(SMALL_VOCAB, 31, DType.BF16);
        try (Kernels k = new Kernels(KernelMode.VECTOR, 2)) {
            ReferenceTarget target = ReferenceTarget.random(model, 2, 32, tap, k);
            SplittableRandom rnd = new SplittableRandom(33 + depth);
            List<SpeculativeLoop.Request> requests = new ArrayList<>();
            int[] joins = {0, 0, 1, 3, 3};
            for (int i = 0; i < joins.length; i++) {
                int[] prompt = new int[1 + rnd.nextInt(6)];
                for (int p = 0; p < prompt.length; p++) {
                    prompt[p] = rnd.nextInt(SMALL_VOCAB.vocabSize());
                }
                RowSampler s = sampling.equals("greedy") ? RowSampler.GREEDY
                        : RowSampler.of(0.7 + 0.2 * i, i % 2 == 0 ? 0 : 5, i == 3 ? 0.9 : 1.0, 1000 + i);
                requests.add(new SpeculativeLoop.Request(prompt, s, 1 + rnd.nextInt(12), joins[i]));
            }
            ReferenceDraftModel drafter = new ReferenceDraftModel(model, k);
            SpeculativeLoop.Result result = new SpeculativeLoop(target, drafter, depth).run(requests);
            for (int i = 0; i < requests.size(); i++) {
                assertThat(result.outputs().get(i)).as("request %d (%s tap, depth %d, %s)", i, tap, depth, sampling)
                        .containsExactly(SpeculativeLoop.plainDecode(target, requests.get(i)));
            }
            if (depth >= 3) {
                assertThat(result.accepted()).as("some proposals were accepted, so commit paths ran").isPositive();
            }
        }
    }
}
