package org.mtporacle.conformance.chain;

import org.mtporacle.api.DType;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.DraftSampling;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException.Kind;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.api.RowContract;
import org.mtporacle.api.RowSampler;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Predicate;

import static org.mtporacle.api.MtpException.Kind.ILLEGAL_STATE;
import static org.mtporacle.api.MtpException.Kind.INCOMPATIBLE_CHECKPOINT;
import static org.mtporacle.api.MtpException.Kind.INVALID_ARGUMENT;

/**
 * The bad-input catalogue (spec §11.1): invalid calls across the contract, each with the state it applies in, the
 * kind every backend must answer with, and the rule it exercises. A correct backend refuses each one and leaves every
 * row unchanged.
 */
public enum BadCall {
    APPEND_NULL_LIST("§11.1", INVALID_ARGUMENT, s -> !s.roundOpen(), (g, x) -> g.append(null)),
    APPEND_WRONG_SCHEMA("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(),
            (g, x) -> g.append(List.of(x.checkpoint("qwen-mtp-v0", 2, 1, x.model.identity(), false)))),
    APPEND_FOREIGN_MODEL("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(),
            (g, x) -> g.append(List.of(x.checkpoint(RowCheckpoint.SCHEMA, 2, 1, "another-model", false)))),
    APPEND_MISALIGNED_OFFSET("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(),
            (g, x) -> g.append(List.of(x.checkpoint(RowCheckpoint.SCHEMA, 3, 1, x.model.identity(), false)))),
    APPEND_ZERO_PROCESSED("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(),
            (g, x) -> g.append(List.of(x.checkpoint(RowCheckpoint.SCHEMA, 0, -1, x.model.identity(), false)))),
    APPEND_KV_WRONG_LENGTH("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        RowCheckpoint ok = x.checkpoint(RowCheckpoint.SCHEMA, 4, 3, x.model.identity(), false);
        g.append(List.of(new RowCheckpoint(ok.schema(), ok.processedTokens(), ok.draftOffset(), ok.modelIdentity(),
                x.kv(2), x.kv(2), ok.hidden())));
    }),
    APPEND_KV_MISSING("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        RowCheckpoint ok = x.checkpoint(RowCheckpoint.SCHEMA, 3, 2, x.model.identity(), false);
        g.append(List.of(new RowCheckpoint(ok.schema(), 3, 2, ok.modelIdentity(), null, null, ok.hidden())));
    }),
    APPEND_P1_WITH_KV("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        RowCheckpoint ok = x.checkpoint(RowCheckpoint.SCHEMA, 1, 0, x.model.identity(), false);
        g.append(List.of(new RowCheckpoint(ok.schema(), 1, 0, ok.modelIdentity(), x.kv(1), x.kv(1), ok.hidden())));
    }),
    APPEND_HIDDEN_WRONG_SIZE("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        int h = x.config().hiddenSize() + 1;
        g.append(List.of(new RowCheckpoint(RowCheckpoint.SCHEMA, 1, 0, x.model.identity(), null, null,
                HostTensor.ofFloats(new float[h], 1, 1, h))));
    }),
    APPEND_HIDDEN_NAN("§11.1", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(),
            (g, x) -> g.append(List.of(x.checkpoint(RowCheckpoint.SCHEMA, 2, 1, x.model.identity(), true)))),
    APPEND_HIDDEN_INTEGER_DTYPE("§11.1", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        int h = x.config().hiddenSize();
        g.append(List.of(new RowCheckpoint(RowCheckpoint.SCHEMA, 1, 0, x.model.identity(), null, null,
                HostTensor.ofInts(new int[h], 1, 1, h))));
    }),
    APPEND_KEYS_INFINITE("§11.1", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        RowCheckpoint ok = x.checkpoint(RowCheckpoint.SCHEMA, 3, 2, x.model.identity(), false);
        float[] k = ok.keys().toFloatArray();
        k[x.rnd.nextInt(k.length)] = Float.POSITIVE_INFINITY;
        g.append(List.of(new RowCheckpoint(ok.schema(), 3, 2, ok.modelIdentity(),
                HostTensor.ofFloats(k, ok.keys().shape()), ok.values(), ok.hidden())));
    }),
    APPEND_VALUES_MISSING("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        RowCheckpoint ok = x.checkpoint(RowCheckpoint.SCHEMA, 3, 2, x.model.identity(), false);
        g.append(List.of(new RowCheckpoint(ok.schema(), 3, 2, ok.modelIdentity(), ok.keys(), null, ok.hidden())));
    }),
    APPEND_KV_WRONG_HEADS("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        RowCheckpoint ok = x.checkpoint(RowCheckpoint.SCHEMA, 2, 1, x.model.identity(), false);
        int n = (x.config().numKvHeads() + 1) * x.config().headDim();
        HostTensor kv = ChainData.hiddens(x.rnd, 1, 1, n).reshape(1, x.config().numKvHeads() + 1, 1,
                x.config().headDim());
        g.append(List.of(new RowCheckpoint(ok.schema(), 2, 1, ok.modelIdentity(), kv, kv, ok.hidden())));
    }),
    APPEND_GOOD_THEN_BAD("§5.2", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        List<RowCheckpoint> list = new ArrayList<>();
        list.add(null);
        list.add(x.checkpoint(RowCheckpoint.SCHEMA, 1, 0, x.model.identity(), false));
        list.add(x.checkpoint(RowCheckpoint.SCHEMA, 2, 0, x.model.identity(), false));
        g.append(list);
    }),
    APPEND_RELABELLED_CHECKPOINT("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        // captured on another model, then labelled with this one's identity without recomputing the digest
        RowCheckpoint a = x.checkpoint(RowCheckpoint.SCHEMA, 3, 2, "another-model", false);
        g.append(List.of(new RowCheckpoint(a.schema(), 3, 2, x.model.identity(), a.keys(), a.values(), a.hidden(),
                a.digest())));
    }),
    APPEND_CHECKPOINT_CONTENT_CHANGED("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        RowCheckpoint ok = x.checkpoint(RowCheckpoint.SCHEMA, 2, 1, x.model.identity(), false);
        float[] h = ok.hidden().toFloatArray();
        h[x.rnd.nextInt(h.length)] += 1f;
        g.append(List.of(new RowCheckpoint(ok.schema(), 2, 1, ok.modelIdentity(), ok.keys(), ok.values(),
                HostTensor.ofFloats(h, ok.hidden().shape()), ok.digest())));
    }),
    APPEND_CHECKPOINT_WITHOUT_DIGEST("§6", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        RowCheckpoint ok = x.checkpoint(RowCheckpoint.SCHEMA, 2, 1, x.model.identity(), false);
        g.append(List.of(new RowCheckpoint(ok.schema(), 2, 1, ok.modelIdentity(), ok.keys(), ok.values(),
                ok.hidden())));
    }),
    APPEND_CHECKPOINT_RELEASED("§11.12", INVALID_ARGUMENT, s -> !s.roundOpen(), (g, x) -> {
        RowCheckpoint ok = x.checkpoint(RowCheckpoint.SCHEMA, 1, 0, x.model.identity(), false);
        g.append(List.of(new RowCheckpoint(ok.schema(), 1, 0, ok.modelIdentity(), null, null,
                x.released(ok.hidden()))));
    }),
    APPEND_DURING_ROUND("§9.2", ILLEGAL_STATE, GroupShape::roundOpen,
            (g, x) -> g.append(Collections.singletonList(null))),

    FILTER_NULL("§11.1", INVALID_ARGUMENT, s -> !s.roundOpen(), (g, x) -> g.filterRows(null)),
    FILTER_NEGATIVE_INDEX("§11.1", INVALID_ARGUMENT, s -> !s.roundOpen(), (g, x) -> g.filterRows(new int[] {-1})),
    FILTER_INDEX_OUT_OF_RANGE("§11.1", INVALID_ARGUMENT, s -> !s.roundOpen(),
            (g, x) -> g.filterRows(new int[] {x.shape.rows()})),
    FILTER_REPEATED_INDEX("§11.1", INVALID_ARGUMENT, s -> !s.roundOpen() && s.rows() > 0,
            (g, x) -> g.filterRows(new int[] {0, 0})),
    FILTER_DURING_ROUND("§9.2", ILLEGAL_STATE, GroupShape::roundOpen, (g, x) -> g.filterRows(new int[0])),

    PREFILL_NULL_TOKENS("§11.1", INVALID_ARGUMENT, GroupShape::canPrefill,
            (g, x) -> g.prefill(null, x.context(x.shape.rows(), 2))),
    PREFILL_WRONG_ROW_COUNT("§11.1", INVALID_ARGUMENT, GroupShape::canPrefill,
            (g, x) -> g.prefill(x.tokens(x.shape.rows() + 1, 2), x.context(x.shape.rows() + 1, 2))),
    PREFILL_ZERO_LENGTH("§5.4", INVALID_ARGUMENT, GroupShape::canPrefill,
            (g, x) -> g.prefill(x.tokens(x.shape.rows(), 0), x.context(x.shape.rows(), 0))),
    PREFILL_NEGATIVE_TOKEN("§11.1", INVALID_ARGUMENT, GroupShape::canPrefill,
            (g, x) -> g.prefill(x.filledTokens(x.shape.rows(), 2, -1), x.context(x.shape.rows(), 2))),
    PREFILL_TOKEN_OUT_OF_VOCAB("§11.1", INVALID_ARGUMENT, GroupShape::canPrefill,
            (g, x) -> g.prefill(x.filledTokens(x.shape.rows(), 2, x.config().vocabSize()),
                    x.context(x.shape.rows(), 2))),
    PREFILL_I64_TOKEN_WRAPS_TO_VALID_INT("§11.1", INVALID_ARGUMENT, GroupShape::canPrefill, (g, x) -> {
        // 2^32 + 1 truncates to the valid id 1: a backend that narrows I64 ids to int before checking accepts it
        int b = x.shape.rows();
        long[] ids = new long[b * 2];
        Arrays.fill(ids, 1);
        ids[x.rnd.nextInt(ids.length)] = (1L << 32) + 1;
        java.nio.ByteBuffer bytes = java.nio.ByteBuffer.allocate(ids.length * 8)
                .order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (long id : ids) {
            bytes.putLong(id);
        }
        g.prefill(HostTensor.copyOf(DType.I64, new int[] {b, 2},
                java.lang.foreign.MemorySegment.ofArray(bytes.array())), x.context(b, 2));
    }),
    PREFILL_FLOAT_TOKENS("§11.1", INVALID_ARGUMENT, GroupShape::canPrefill,
            (g, x) -> g.prefill(HostTensor.ofFloats(new float[x.shape.rows() * 2], x.shape.rows(), 2),
                    x.context(x.shape.rows(), 2))),
    PREFILL_CONTEXT_LENGTH_MISMATCH("§5.4", INVALID_ARGUMENT, GroupShape::canPrefill,
            (g, x) -> g.prefill(x.tokens(x.shape.rows(), 2), x.context(x.shape.rows(), 3))),
    PREFILL_CONTEXT_WRONG_HIDDEN("§11.1", INVALID_ARGUMENT, GroupShape::canPrefill, (g, x) -> {
        int b = x.shape.rows();
        int h = x.config().hiddenSize() + 1;
        g.prefill(x.tokens(b, 2), HostTensor.ofFloats(new float[b * 2 * h], b, 2, h));
    }),
    PREFILL_CONTEXT_NAN("§11.1", INVALID_ARGUMENT, GroupShape::canPrefill,
            (g, x) -> g.prefill(x.tokens(x.shape.rows(), 2), x.poisoned(x.shape.rows(), 2, Float.NaN))),
    PREFILL_CONTEXT_INFINITE("§11.1", INVALID_ARGUMENT, GroupShape::canPrefill,
            (g, x) -> g.prefill(x.tokens(x.shape.rows(), 2),
                    x.poisoned(x.shape.rows(), 2, Float.NEGATIVE_INFINITY))),
    PREFILL_CONTEXT_HUGE_FINITE("§11.14", INVALID_ARGUMENT, GroupShape::canPrefill,
            // finite, but its square overflows f32 in the block's RMSNorm
            (g, x) -> g.prefill(x.tokens(x.shape.rows(), 2), x.poisoned(x.shape.rows(), 2, -1e19f).convert(DType.BF16))),
    PREFILL_CONTEXT_BF16_NAN("§11.1", INVALID_ARGUMENT, GroupShape::canPrefill,
            (g, x) -> g.prefill(x.tokens(x.shape.rows(), 2),
                    x.poisoned(x.shape.rows(), 2, Float.NaN).convert(DType.BF16))),
    PREFILL_CONTEXT_INTEGER_DTYPE("§11.1", INVALID_ARGUMENT, GroupShape::canPrefill, (g, x) -> {
        int b = x.shape.rows();
        int h = x.config().hiddenSize();
        g.prefill(x.tokens(b, 2), HostTensor.ofInts(new int[b * 2 * h], b, 2, h));
    }),
    PREFILL_CONTEXT_RELEASED("§11.12", INVALID_ARGUMENT, GroupShape::canPrefill,
            (g, x) -> g.prefill(x.tokens(x.shape.rows(), 2), x.released(x.context(x.shape.rows(), 2)))),
    PREFILL_TOKENS_RELEASED("§11.12", INVALID_ARGUMENT, GroupShape::canPrefill,
            (g, x) -> g.prefill(x.released(x.tokens(x.shape.rows(), 2)), x.context(x.shape.rows(), 2))),
    PREFILL_DURING_ROUND("§9.2", ILLEGAL_STATE, GroupShape::roundOpen,
            (g, x) -> g.prefill(x.tokens(x.shape.rows(), 1), x.context(x.shape.rows(), 1))),
    PREFILL_NO_ROWS("§11.1", ILLEGAL_STATE, s -> !s.roundOpen() && s.rows() == 0,
            (g, x) -> g.prefill(x.tokens(0, 1), x.context(0, 1))),

    DRAFT_NEGATIVE_DEPTH("§11.1", INVALID_ARGUMENT, GroupShape::canDraft, (g, x) -> x.draft(g, -1, 0)),
    DRAFT_DEPTH_TOO_LARGE("§11.1", INVALID_ARGUMENT, GroupShape::canDraft,
            (g, x) -> x.draft(g, RowContract.MAX_DEPTH + 1, 0)),
    DRAFT_PENDING_WRONG_LENGTH("§11.1", INVALID_ARGUMENT, GroupShape::canDraft, (g, x) -> {
        int b = x.shape.rows();
        g.draft(new int[b + 1], 1, new long[b], DraftSampling.greedy(b));
    }),
    DRAFT_PENDING_OUT_OF_VOCAB("§11.1", INVALID_ARGUMENT, GroupShape::canDraft, (g, x) -> {
        int b = x.shape.rows();
        int[] pending = new int[b];
        pending[b - 1] = x.config().vocabSize();
        g.draft(pending, 1, new long[b], DraftSampling.greedy(b));
    }),
    DRAFT_PENDING_NEGATIVE("§11.1", INVALID_ARGUMENT, GroupShape::canDraft, (g, x) -> {
        int b = x.shape.rows();
        int[] pending = new int[b];
        pending[x.rnd.nextInt(b)] = -1;
        g.draft(pending, 1, new long[b], DraftSampling.greedy(b));
    }),
    DRAFT_STEPS_WRONG_LENGTH("§11.1", INVALID_ARGUMENT, GroupShape::canDraft, (g, x) -> {
        int b = x.shape.rows();
        g.draft(new int[b], 1, new long[b + 1], DraftSampling.greedy(b));
    }),
    DRAFT_NEGATIVE_STEP("§11.1", INVALID_ARGUMENT, GroupShape::canDraft, (g, x) -> x.draft(g, 1, -1)),
    DRAFT_SAMPLING_WRONG_ROWS("§11.1", INVALID_ARGUMENT, GroupShape::canDraft, (g, x) -> {
        int b = x.shape.rows();
        g.draft(new int[b], 1, new long[b], DraftSampling.greedy(b + 1));
    }),
    DRAFT_NULL_PENDING("§11.1", INVALID_ARGUMENT, GroupShape::canDraft, (g, x) -> {
        int b = x.shape.rows();
        g.draft(null, 1, new long[b], DraftSampling.greedy(b));
    }),
    DRAFT_NULL_ROW_SAMPLER("§11.12", INVALID_ARGUMENT, GroupShape::canDraft, (g, x) -> {
        int b = x.shape.rows();
        List<RowSampler> samplers = new ArrayList<>(Collections.nCopies(b, RowSampler.GREEDY));
        samplers.set(x.rnd.nextInt(b), null);
        g.draft(new int[b], 1, new long[b], new DraftSampling(samplers));
    }),
    DRAFT_TEMPERATURE_BELOW_MINIMUM("§11.12", INVALID_ARGUMENT, GroupShape::canDraft, (g, x) -> {
        int b = x.shape.rows();
        RowSampler[] samplers = new RowSampler[b];
        Arrays.fill(samplers, RowSampler.GREEDY);
        samplers[x.rnd.nextInt(b)] = RowSampler.of(1e-39, 0, 1.0, 3);
        g.draft(new int[b], 1, new long[b], DraftSampling.of(samplers));
    }),
    DRAFT_DURING_ROUND("§11.1", ILLEGAL_STATE, GroupShape::roundOpen, (g, x) -> x.draft(g, 1, 0)),
    DRAFT_COLD_ROW("§5.7", ILLEGAL_STATE, s -> !s.roundOpen() && s.hasColdRow(), (g, x) -> x.draft(g, 1, 0)),
    DRAFT_NO_ROWS("§11.1", ILLEGAL_STATE, s -> !s.roundOpen() && s.rows() == 0,
            (g, x) -> g.draft(new int[0], 1, new long[0], DraftSampling.greedy(0))),

    COMMIT_WITHOUT_ROUND("§5.8", ILLEGAL_STATE, s -> !s.roundOpen(),
            (g, x) -> g.commit(new int[x.shape.rows()], x.context(x.shape.rows(), 1))),
    COMMIT_NULL_ACCEPTED("§11.1", INVALID_ARGUMENT, GroupShape::roundOpen,
            (g, x) -> g.commit(null, x.context(x.shape.rows(), x.shape.depth() + 1))),
    COMMIT_ACCEPTED_WRONG_LENGTH("§11.1", INVALID_ARGUMENT, GroupShape::roundOpen,
            (g, x) -> g.commit(new int[x.shape.rows() + 1], x.context(x.shape.rows(), x.shape.depth() + 1))),
    COMMIT_ACCEPTED_NEGATIVE("§5.8", INVALID_ARGUMENT, GroupShape::roundOpen, (g, x) -> {
        int[] acc = new int[x.shape.rows()];
        acc[x.rnd.nextInt(acc.length)] = -1;
        g.commit(acc, x.context(x.shape.rows(), x.shape.depth() + 1));
    }),
    COMMIT_ACCEPTED_ABOVE_DEPTH("§5.8", INVALID_ARGUMENT, GroupShape::roundOpen, (g, x) -> {
        int[] acc = new int[x.shape.rows()];
        acc[x.rnd.nextInt(acc.length)] = x.shape.depth() + 1;
        g.commit(acc, x.context(x.shape.rows(), x.shape.depth() + 1));
    }),
    COMMIT_CONTEXT_WRONG_WIDTH("§11.1", INVALID_ARGUMENT, GroupShape::roundOpen,
            (g, x) -> g.commit(new int[x.shape.rows()], x.context(x.shape.rows(), x.shape.depth() + 2))),
    COMMIT_CONTEXT_HUGE_FINITE("§11.14", INVALID_ARGUMENT, GroupShape::roundOpen,
            (g, x) -> g.commit(new int[x.shape.rows()], x.poisoned(x.shape.rows(), x.shape.depth() + 1, 3e18f))),
    COMMIT_CONTEXT_NAN("§11.1", INVALID_ARGUMENT, GroupShape::roundOpen,
            (g, x) -> g.commit(new int[x.shape.rows()], x.poisoned(x.shape.rows(), x.shape.depth() + 1, Float.NaN))),
    COMMIT_CONTEXT_INFINITE("§11.1", INVALID_ARGUMENT, GroupShape::roundOpen,
            (g, x) -> g.commit(new int[x.shape.rows()],
                    x.poisoned(x.shape.rows(), x.shape.depth() + 1, Float.POSITIVE_INFINITY))),
    COMMIT_CONTEXT_F16_NAN("§11.1", INVALID_ARGUMENT, GroupShape::roundOpen,
            (g, x) -> g.commit(new int[x.shape.rows()],
                    x.poisoned(x.shape.rows(), x.shape.depth() + 1, Float.NaN).convert(DType.F16))),
    COMMIT_CONTEXT_RELEASED("§11.12", INVALID_ARGUMENT, GroupShape::roundOpen,
            (g, x) -> g.commit(new int[x.shape.rows()], x.released(x.context(x.shape.rows(), x.shape.depth() + 1)))),
    COMMIT_CONTEXT_WRONG_HIDDEN("§11.1", INVALID_ARGUMENT, GroupShape::roundOpen, (g, x) -> {
        int b = x.shape.rows();
        int w = x.shape.depth() + 1;
        int h = x.config().hiddenSize() - 1;
        g.commit(new int[b], HostTensor.ofFloats(new float[b * w * h], b, w, h));
    }),
    COMMIT_CONTEXT_BF16_WRONG_ROWS("§11.1", INVALID_ARGUMENT, GroupShape::roundOpen,
            (g, x) -> g.commit(new int[x.shape.rows()],
                    x.context(x.shape.rows() + 1, x.shape.depth() + 1).convert(DType.BF16))),

    CAPTURE_NEGATIVE_ROW("§11.1", INVALID_ARGUMENT, s -> !s.roundOpen(), (g, x) -> g.capture(-1)),
    CAPTURE_ROW_OUT_OF_RANGE("§11.1", INVALID_ARGUMENT, s -> !s.roundOpen(), (g, x) -> g.capture(x.shape.rows())),
    CAPTURE_DURING_ROUND("§9.2", ILLEGAL_STATE, GroupShape::roundOpen, (g, x) -> g.capture(0)),
    CAPTURE_COLD_ROW("§11.1", ILLEGAL_STATE, s -> !s.roundOpen() && s.hasColdRow(), (g, x) -> {
        for (int r = 0; r < x.shape.rows(); r++) {
            if (!x.shape.hasHidden(r)) {
                g.capture(r);
                return;
            }
        }
    });

    /** Applies the call to {@code group}. */
    @FunctionalInterface
    interface Invocation {
        void invoke(DraftRows group, Context ctx);
    }

    private final String rule;
    private final Kind expected;
    private final Predicate<GroupShape> applies;
    private final Invocation invocation;

    BadCall(String rule, Kind expected, Predicate<GroupShape> applies, Invocation invocation) {
        this.rule = rule;
        this.expected = expected;
        this.applies = applies;
        this.invocation = invocation;
    }

    /** The spec section whose rule the call breaks. */
    public String rule() {
        return rule;
    }

    /** The kind every backend must refuse it with. */
    public Kind expectedKind() {
        return expected;
    }

    /** Whether the call is invalid for the reason it names in this state (otherwise it is not run). */
    public boolean appliesTo(GroupShape shape) {
        return applies.test(shape);
    }

    /** Makes the call; the arguments are derived from {@code seed} and the state. */
    public void invoke(DraftRows group, MtpModel model, GroupShape shape, long seed) {
        invocation.invoke(group, new Context(model, shape, new SplittableRandom(seed)));
    }

    /** Argument builders for the calls. */
    static final class Context {
        final MtpModel model;
        final GroupShape shape;
        final SplittableRandom rnd;

        Context(MtpModel model, GroupShape shape, SplittableRandom rnd) {
            this.model = model;
            this.shape = shape;
            this.rnd = rnd;
        }

        MtpConfig config() {
            return model.config();
        }

        HostTensor tokens(int b, int l) {
            int[] v = new int[b * l];
            for (int i = 0; i < v.length; i++) {
                v[i] = rnd.nextInt(config().vocabSize());
            }
            return HostTensor.ofInts(v, b, l);
        }

        HostTensor filledTokens(int b, int l, int value) {
            int[] v = new int[b * l];
            Arrays.fill(v, value);
            return HostTensor.ofInts(v, b, l);
        }

        HostTensor context(int b, int l) {
            return ChainData.hiddens(rnd, b, l, config().hiddenSize());
        }

        HostTensor poisoned(int b, int l, float bad) {
            float[] v = context(b, l).toFloatArray();
            if (v.length > 0) {
                v[rnd.nextInt(v.length)] = bad;
            }
            return HostTensor.ofFloats(v, b, l, config().hiddenSize());
        }

        /** A view of {@code t}'s bytes in an arena that is already closed (a tensor of a file closed since). */
        HostTensor released(HostTensor t) {
            java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared();
            java.lang.foreign.MemorySegment seg = arena.allocate(Math.max(1, t.byteSize()));
            seg.copyFrom(t.data());
            HostTensor view = HostTensor.view(t.dtype(), t.shape(), seg.asSlice(0, t.byteSize()));
            arena.close();
            return view;
        }

        HostTensor kv(int positions) {
            int n = config().numKvHeads() * positions * config().headDim();
            return ChainData.hiddens(rnd, 1, 1, n).reshape(1, config().numKvHeads(), positions, config().headDim());
        }

        RowCheckpoint checkpoint(String schema, int p, int offset, String identity, boolean nanHidden) {
            int h = config().hiddenSize();
            float[] hidden = ChainData.hiddens(rnd, 1, 1, h).toFloatArray();
            if (nanHidden) {
                hidden[rnd.nextInt(h)] = Float.NaN;
            }
            HostTensor k = p > 1 ? kv(p - 1) : null;
            HostTensor v = p > 1 ? kv(p - 1) : null;
            return RowCheckpoint.sealed(schema, p, offset, identity, k, v, HostTensor.ofFloats(hidden, 1, 1, h));
        }

        void draft(DraftRows g, int depth, long step) {
            int b = shape.rows();
            long[] steps = new long[b];
            Arrays.fill(steps, step);
            g.draft(new int[b], depth, steps, DraftSampling.greedy(b));
        }
    }
}
