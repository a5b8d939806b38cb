package org.mtporacle.conformance.golden;

import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LoadedTarget;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.reference.ReferenceDraftRows;
import org.mtporacle.reference.target.SpeculativeDecoding;
import org.mtporacle.reference.target.SpeculativeDecoding.Options;
import org.mtporacle.reference.target.SpeculativeDecoding.Request;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One whole speculative run as a golden sees it (spec §13.4): the reference's loop ({@link SpeculativeDecoding}, the
 * only copy of the loop) drives a backend's target and drafter rows, and after every round's commits each request's
 * drafted tokens, accepted count, emitted tokens, and target and drafter states are written down. A state is kept as
 * P, its content digest and the L2 norm of each tensor: the digest serves an exact comparison, the norms a loose one
 * ({@link SpeculativeGoldenVerifier}).
 */
public final class SpeculativeRun {
    private SpeculativeRun() {
    }

    /**
     * A row's state after a round's commits: P, the content digest (target: {@link TargetCheckpoint#contentDigest()};
     * drafter: {@link CheckpointDigest}) and the L2 norm of each tensor, in double (target: conv windows, recurrent
     * states, keys, values; drafter: keys, values, hidden; 0 for an absent tensor).
     */
    public record State(int processedTokens, String sha256, double[] norms) {
        static final List<String> TARGET = List.of("conv", "state", "keys", "values");
        static final List<String> DRAFTER = List.of("keys", "values", "hidden");

        static State of(TargetCheckpoint cp) {
            return new State(cp.processedTokens(), cp.contentDigest(), norms(cp.convWindows(), cp.recurrentStates(),
                    cp.keys(), cp.values()));
        }

        static State of(RowCheckpoint cp) {
            return new State(cp.processedTokens(), CheckpointDigest.of(cp), norms(cp.keys(), cp.values(),
                    cp.hidden()));
        }

        private static double[] norms(HostTensor... ts) {
            double[] out = new double[ts.length];
            for (int i = 0; i < ts.length; i++) {
                if (ts[i] != null) {
                    double s = 0;
                    for (float x : ts[i].toFloatArray()) {
                        s += (double) x * x;
                    }
                    out[i] = Math.sqrt(s);
                }
            }
            return out;
        }
    }

    /** One request's part in one round. */
    public record Row(int request, int[] drafted, int accepted, int[] emitted, State target, State drafter) {
    }

    /** One round: its index, the depth the loop drafted, and the rows in row order. */
    public record Round(int round, int depth, List<Row> rows) {
        public Round {
            rows = List.copyOf(rows);
        }
    }

    /**
     * The rounds, each request's outputs, and (for the reference) the drafter's log-probabilities behind every drafted
     * token, {@code logprobs.get(k)[row][position]} of round entry {@code k}, the rows of a {@link ReferenceDraftRows}
     * only (empty for another backend).
     */
    public record Result(List<Round> rounds, List<int[]> outputs, List<float[][][]> logprobs) {
    }

    /** Runs {@code requests} through the loop on {@code target} and {@code drafter} under {@code options}. */
    public static Result run(LoadedTarget target, DraftModel drafter, List<Request> requests, Options options) {
        Watched watched = new Watched(drafter);
        List<int[]> order = new ArrayList<>();
        List<Integer> indices = new ArrayList<>();
        List<State[][]> states = new ArrayList<>();
        SpeculativeDecoding.Result r = new SpeculativeDecoding(target, watched, options).run(requests,
                (round, reqs, t, m) -> {
                    State[][] s = new State[reqs.length][];
                    for (int row = 0; row < reqs.length; row++) {
                        s[row] = new State[] {State.of(t.capture(row)), State.of(m.capture(row))};
                    }
                    order.add(reqs.clone());
                    indices.add(round);
                    states.add(s);
                });
        int[] taken = new int[requests.size()];     // rounds each request has taken part in so far
        int[] emittedSoFar = new int[requests.size()];
        Arrays.fill(emittedSoFar, 1);                 // the prefill's token, sampled when the request joined
        List<Round> rounds = new ArrayList<>();
        for (int k = 0; k < order.size(); k++) {
            int[][] drafted = watched.drafts.get(k);
            List<Row> rows = new ArrayList<>();
            for (int row = 0; row < order.get(k).length; row++) {
                int q = order.get(k)[row];
                int a = r.accepted().get(q)[taken[q]++];
                int[] out = r.outputs().get(q);
                int from = Math.min(emittedSoFar[q], out.length);
                int to = Math.min(emittedSoFar[q] + a + 1, out.length);
                emittedSoFar[q] += a + 1;
                rows.add(new Row(q, drafted[row], a, Arrays.copyOfRange(out, from, to), states.get(k)[row][0],
                        states.get(k)[row][1]));
            }
            rounds.add(new Round(indices.get(k), drafted.length == 0 ? 0 : drafted[0].length, rows));
        }
        return new Result(rounds, r.outputs(), watched.logprobs);
    }

    /**
     * The drafter as the loop sees it, keeping each main-group draft's tokens (the loop drafts once per round, on its
     * decode group; prefill-only groups never draft) and, on reference rows, the log-probabilities behind them.
     */
    private static final class Watched implements DraftModel {
        final DraftModel inner;
        final List<int[][]> drafts = new ArrayList<>();
        final List<float[][][]> logprobs = new ArrayList<>();

        Watched(DraftModel inner) {
            this.inner = inner;
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
            return new Rows(inner.openRows(checkpoints));
        }

        @Override
        public void close() {
            // the caller owns the backend's model
        }

        private final class Rows implements DraftRows {
            final DraftRows rows;

            Rows(DraftRows rows) {
                this.rows = rows;
            }

            @Override
            public int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling) {
                int[][] out;
                if (rows instanceof ReferenceDraftRows ref) {
                    float[][][] lp = new float[pending.length][depth][];
                    out = ref.draft(pending, depth, steps, sampling, (row, pos, logprobs, off, sampled) -> {
                        lp[row][pos] = Arrays.copyOfRange(logprobs, off, off + inner.model().config().vocabSize());
                        return sampled;
                    });
                    logprobs.add(lp);
                } else {
                    out = rows.draft(pending, depth, steps, sampling);
                }
                int[][] copy = new int[out.length][];
                for (int i = 0; i < out.length; i++) {
                    copy[i] = out[i].clone();
                }
                drafts.add(copy);
                return out;
            }

            @Override
            public int rowCount() {
                return rows.rowCount();
            }

            @Override
            public void append(List<RowCheckpoint> checkpoints) {
                rows.append(checkpoints);
            }

            @Override
            public void filterRows(int[] keep) {
                rows.filterRows(keep);
            }

            @Override
            public void prefill(HostTensor tokens, HostTensor context) {
                rows.prefill(tokens, context);
            }

            @Override
            public void commit(int[] accepted, HostTensor context) {
                rows.commit(accepted, context);
            }

            @Override
            public RowCheckpoint capture(int row) {
                return rows.capture(row);
            }

            @Override
            public boolean isClosed() {
                return rows.isClosed();
            }

            @Override
            public void close() {
                rows.close();
            }
        }
    }

    /** Only the target: plain decoding of every request on it ({@link SpeculativeDecoding#plain}). */
    public static List<int[]> plain(LoadedTarget target, List<Request> requests) {
        return requests.stream().map(q -> SpeculativeDecoding.plain(target, q)).toList();
    }

}
