package org.mtporacle.conformance.mutants;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RouterChoices;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.ReferenceDraftModel;
import org.mtporacle.reference.ReferenceDraftRows;

import java.util.List;
import java.util.stream.IntStream;

/**
 * The reference itself with one change: its MoE router breaks exactly equal probabilities toward the higher expert
 * index, against spec §12.3 step 3. Every other bit is the reference's, so it can be held to {@code exact}; its rows
 * report their router choices.
 *
 * @param inner the reference model it runs
 */
public record HigherIndexTies(ReferenceDraftModel inner) implements DraftModel {
    /** Top-{@code k} by probability, equal probabilities toward the higher index. */
    public static int[] higherIndexWins(float[] probs, int k) {
        return IntStream.range(0, probs.length).boxed()
                .sorted((a, b) -> probs[a] != probs[b] ? Float.compare(probs[b], probs[a]) : Integer.compare(b, a))
                .limit(k).mapToInt(Integer::intValue).toArray();
    }

    @Override
    public MtpModel model() {
        return inner.model();
    }

    @Override
    public String numerics() {
        return inner.numerics();
    }

    @Override
    public DraftRows openRows(List<RowCheckpoint> checkpoints) {
        ReferenceDraftRows rows = inner.openReferenceRows(checkpoints);
        if (!(inner.model().weights().mlp() instanceof MlpWeights.Moe moe)) {
            return rows;
        }
        int k = moe.topK();
        return (DraftRows) java.lang.reflect.Proxy.newProxyInstance(DraftRows.class.getClassLoader(),
                new Class<?>[] {DraftRows.class, RouterChoices.class}, (proxy, method, args) -> {
                    if (List.of("prefill", "draft", "commit").contains(method.getName())) {
                        rows.chooseExpertsNextCall((row, pos, probs, chosen) -> higherIndexWins(probs, k));
                    }
                    try {
                        return method.invoke(rows, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    @Override
    public void close() {
        inner.close();
    }
}
