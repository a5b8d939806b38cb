package org.mtporacle.tools;

import org.mtporacle.api.Availability;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.ReferenceBackend;

import java.util.List;
import java.util.Map;

/**
 * Backends the tools tests find through ServiceLoader: one that always diverges, one that diverges once its process
 * has a history, one that is never available.
 */
public final class TestBackends {
    private TestBackends() {
    }

    /** The reference, except that every first proposal of a draft is the next token id: a divergence by design. */
    public static final class Drifting implements MtpBackend {
        @Override
        public String name() {
            return "drifting";
        }

        @Override
        public String description() {
            return "test backend: the reference with every first drafted token shifted by one";
        }

        @Override
        public Availability availability() {
            return Availability.yes("in-process test backend");
        }

        @Override
        public List<BackendProfile> profiles() {
            return List.of(new BackendProfile("drifting", Map.of(), org.mtporacle.api.Tolerance.F32));
        }

        /** Its target is the reference target with logit 1 of every forward's first position raised by 1000. */
        @Override
        public boolean supportsTarget() {
            return true;
        }

        @Override
        public org.mtporacle.api.LoadedTarget loadTarget(org.mtporacle.api.TargetModel model,
                                                         Map<String, String> options) {
            org.mtporacle.api.LoadedTarget inner = new ReferenceBackend().loadTarget(model, Map.of());
            return new org.mtporacle.api.LoadedTarget() {
                @Override
                public org.mtporacle.api.TargetModel model() {
                    return inner.model();
                }

                @Override
                public String numerics() {
                    return "reference target, drifted";
                }

                @Override
                public org.mtporacle.api.TargetRows openRows(List<org.mtporacle.api.TargetCheckpoint> checkpoints) {
                    return new ShiftedTarget(inner.openRows(checkpoints));
                }

                @Override
                public void close() {
                    inner.close();
                }
            };
        }

        @Override
        public DraftModel load(MtpModel model, Map<String, String> options) {
            DraftModel inner = new ReferenceBackend().load(model, Map.of());
            return new DraftModel() {
                @Override
                public MtpModel model() {
                    return inner.model();
                }

                @Override
                public String numerics() {
                    return "reference, drifted";
                }

                @Override
                public DraftRows openRows(List<RowCheckpoint> checkpoints) {
                    return new Shifted(inner.openRows(checkpoints), model.config().vocabSize(), () -> true);
                }

                @Override
                public void close() {
                    inner.close();
                }
            };
        }
    }

    private record ShiftedTarget(org.mtporacle.api.TargetRows rows) implements org.mtporacle.api.TargetRows {
        private static org.mtporacle.api.TargetOutput drift(org.mtporacle.api.TargetOutput o) {
            float[] l = o.logits().toFloatArray();
            l[1] += 1000f;
            return new org.mtporacle.api.TargetOutput(HostTensor.ofFloats(l, o.logits().shape()), o.preNorm(),
                    o.postNorm());
        }

        @Override
        public int rowCount() {
            return rows.rowCount();
        }

        @Override
        public int[] processedTokens() {
            return rows.processedTokens();
        }

        @Override
        public void append(List<org.mtporacle.api.TargetCheckpoint> checkpoints) {
            rows.append(checkpoints);
        }

        @Override
        public void filterRows(int[] keep) {
            rows.filterRows(keep);
        }

        @Override
        public org.mtporacle.api.TargetOutput prefill(HostTensor tokens) {
            return drift(rows.prefill(tokens));
        }

        @Override
        public org.mtporacle.api.TargetOutput verify(HostTensor tokens) {
            return drift(rows.verify(tokens));
        }

        @Override
        public void commit(int[] accepted) {
            rows.commit(accepted);
        }

        @Override
        public org.mtporacle.api.TargetCheckpoint capture(int row) {
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

    /**
     * The reference until this process has answered {@link #HONEST_DRAFTS} drafts, then drifting as {@link Drifting}
     * does: a fault of the process's history, which a fresh process (a new {@code exec:} engine) does not show.
     */
    public static final class LateDrifting implements MtpBackend {
        static final int HONEST_DRAFTS = 2;
        private static final java.util.concurrent.atomic.AtomicInteger DRAFTS =
                new java.util.concurrent.atomic.AtomicInteger();

        @Override
        public String name() {
            return "drifting-late";
        }

        @Override
        public String description() {
            return "test backend: the reference for its process's first " + HONEST_DRAFTS + " drafts, then drifting";
        }

        @Override
        public Availability availability() {
            return Availability.yes("in-process test backend");
        }

        @Override
        public List<BackendProfile> profiles() {
            return List.of(new BackendProfile("drifting-late", Map.of(), org.mtporacle.api.Tolerance.F32));
        }

        @Override
        public DraftModel load(MtpModel model, Map<String, String> options) {
            DraftModel inner = new ReferenceBackend().load(model, Map.of());
            return new DraftModel() {
                @Override
                public MtpModel model() {
                    return inner.model();
                }

                @Override
                public String numerics() {
                    return "reference, drifting late";
                }

                @Override
                public DraftRows openRows(List<RowCheckpoint> checkpoints) {
                    return new Shifted(inner.openRows(checkpoints), model.config().vocabSize(),
                            () -> DRAFTS.incrementAndGet() > HONEST_DRAFTS);
                }

                @Override
                public void close() {
                    inner.close();
                }
            };
        }
    }

    /** Drafter rows whose drafts' first proposals are shifted by one whenever {@code drift} says so. */
    private record Shifted(DraftRows rows, int vocab, java.util.function.BooleanSupplier drift) implements DraftRows {
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
        public int[][] draft(int[] pending, int depth, long[] steps, DraftSampling sampling) {
            int[][] out = rows.draft(pending, depth, steps, sampling);
            if (!drift.getAsBoolean()) {
                return out;
            }
            for (int[] row : out) {
                if (row.length > 0) {
                    row[0] = (row[0] + 1) % vocab;
                }
            }
            return out;
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

    /** The reference in scalar mode held to f32 against the vector oracle: small, non-zero NMSE within tolerance. */
    public static final class Scalar implements MtpBackend {
        @Override
        public String name() {
            return "scalar";
        }

        @Override
        public String description() {
            return "test backend: the reference's scalar kernels";
        }

        @Override
        public Availability availability() {
            return Availability.yes("in-process test backend");
        }

        @Override
        public List<BackendProfile> profiles() {
            return List.of(new BackendProfile("scalar", Map.of(), org.mtporacle.api.Tolerance.F32));
        }

        @Override
        public DraftModel load(MtpModel model, Map<String, String> options) {
            return new ReferenceBackend().load(model, Map.of("mode", "scalar"));
        }
    }

    /** Never available, as MLX is without its library. */
    public static final class Absent implements MtpBackend {
        @Override
        public String name() {
            return "absent";
        }

        @Override
        public String description() {
            return "test backend that is never available";
        }

        @Override
        public Availability availability() {
            return Availability.no("absent: a test backend that never runs (set nothing, it is on purpose)");
        }

        @Override
        public DraftModel load(MtpModel model, Map<String, String> options) {
            throw new AssertionError("an unavailable backend is never loaded");
        }
    }
}
