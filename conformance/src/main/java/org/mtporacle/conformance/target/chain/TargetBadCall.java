package org.mtporacle.conformance.target.chain;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpConfig;
import org.mtporacle.api.MtpException.Kind;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetConfig;
import org.mtporacle.api.TargetContract;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.TargetRows;

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
 * The target's bad-call catalogue (spec §13.3, with §5.3 and §11.1 for what the row groups share): each invalid call
 * with the rule it breaks, the states it applies in, and the kind every backend must refuse it with. A correct backend
 * refuses each one and leaves every row unchanged (during a round, the round stays open).
 */
public enum TargetBadCall {
    APPEND_NULL_LIST("§11.1", INVALID_ARGUMENT, s -> !s.roundOpen(), (g, x) -> g.append(null)),
    APPEND_WRONG_SCHEMA("§13.3", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        TargetCheckpoint ok = x.checkpoint(2);
        g.append(List.of(new TargetCheckpoint("qwen-target-v0", 2, ok.modelIdentity(), ok.convWindows(),
                ok.recurrentStates(), ok.keys(), ok.values(), null).sealed()));
    }),
    APPEND_FOREIGN_TARGET("§13.3", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        TargetCheckpoint ok = x.checkpoint(2);
        g.append(List.of(TargetCheckpoint.sealed(2, "another-target", ok.convWindows(), ok.recurrentStates(),
                ok.keys(), ok.values())));
    }),
    APPEND_ZERO_PROCESSED("§13.3", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        TargetCheckpoint ok = x.checkpoint(1);
        g.append(List.of(TargetCheckpoint.sealed(0, ok.modelIdentity(), ok.convWindows(), ok.recurrentStates(),
                ok.keys(), ok.values())));
    }),
    /** A conv window of K columns (transformers' layout) where the checkpoint holds the last K−1. */
    APPEND_CONV_WINDOW_K_COLUMNS("§13.3", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        TargetCheckpoint ok = x.checkpoint(3);
        TargetConfig.Gdn d = x.config().gdn();
        g.append(List.of(TargetCheckpoint.sealed(3, ok.modelIdentity(),
                x.random(x.nGdn(), d.convDim(), d.convKernel()), ok.recurrentStates(), ok.keys(), ok.values())));
    }),
    APPEND_STATE_WRONG_SHAPE("§13.3", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        TargetCheckpoint ok = x.checkpoint(3);
        TargetConfig.Gdn d = x.config().gdn();
        g.append(List.of(TargetCheckpoint.sealed(3, ok.modelIdentity(), ok.convWindows(),
                x.random(x.nGdn(), d.numKeyHeads(), d.keyHeadDim(), d.valueHeadDim()), ok.keys(), ok.values())));
    }),
    APPEND_STATE_MISSING("§13.3", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        TargetCheckpoint ok = x.checkpoint(3);
        g.append(List.of(TargetCheckpoint.sealed(3, ok.modelIdentity(), ok.convWindows(), null, ok.keys(),
                ok.values())));
    }),
    APPEND_KEYS_WRONG_LENGTH("§13.3", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        TargetCheckpoint ok = x.checkpoint(4);
        TargetCheckpoint shorter = x.checkpoint(3);
        g.append(List.of(TargetCheckpoint.sealed(4, ok.modelIdentity(), ok.convWindows(), ok.recurrentStates(),
                shorter.keys(), shorter.values())));
    }),
    APPEND_VALUES_MISSING("§13.3", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        TargetCheckpoint ok = x.checkpoint(2);
        g.append(List.of(TargetCheckpoint.sealed(2, ok.modelIdentity(), ok.convWindows(), ok.recurrentStates(),
                ok.keys(), null)));
    }),
    APPEND_STATE_NAN("§13.3", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        TargetCheckpoint ok = x.checkpoint(2);
        float[] v = ok.recurrentStates().toFloatArray();
        v[x.rnd.nextInt(v.length)] = Float.NaN;
        g.append(List.of(TargetCheckpoint.sealed(2, ok.modelIdentity(), ok.convWindows(),
                HostTensor.ofFloats(v, ok.recurrentStates().shape()), ok.keys(), ok.values())));
    }),
    APPEND_CONV_INTEGER_DTYPE("§13.3", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        TargetCheckpoint ok = x.checkpoint(2);
        g.append(List.of(TargetCheckpoint.sealed(2, ok.modelIdentity(),
                HostTensor.ofInts(new int[(int) ok.convWindows().elementCount()], ok.convWindows().shape()),
                ok.recurrentStates(), ok.keys(), ok.values())));
    }),
    APPEND_CONTENT_CHANGED("§13.3", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        TargetCheckpoint ok = x.checkpoint(2);
        float[] v = ok.convWindows().toFloatArray();
        v[x.rnd.nextInt(v.length)] += 1f;
        g.append(List.of(new TargetCheckpoint(ok.schema(), 2, ok.modelIdentity(),
                HostTensor.ofFloats(v, ok.convWindows().shape()), ok.recurrentStates(), ok.keys(), ok.values(),
                ok.digest())));
    }),
    APPEND_WITHOUT_DIGEST("§13.3", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        TargetCheckpoint ok = x.checkpoint(2);
        g.append(List.of(new TargetCheckpoint(ok.schema(), 2, ok.modelIdentity(), ok.convWindows(),
                ok.recurrentStates(), ok.keys(), ok.values(), null)));
    }),
    APPEND_GOOD_THEN_BAD("§5.2", INCOMPATIBLE_CHECKPOINT, s -> !s.roundOpen(), (g, x) -> {
        List<TargetCheckpoint> list = new ArrayList<>();
        list.add(null);
        list.add(x.checkpoint(2));
        TargetCheckpoint ok = x.checkpoint(3);
        list.add(TargetCheckpoint.sealed(3, "another-target", ok.convWindows(), ok.recurrentStates(), ok.keys(),
                ok.values()));
        g.append(list);
    }),
    APPEND_DURING_ROUND("§13.3", ILLEGAL_STATE, TargetShape::roundOpen,
            (g, x) -> g.append(Collections.singletonList(null))),

    FILTER_NULL("§11.1", INVALID_ARGUMENT, s -> !s.roundOpen(), (g, x) -> g.filterRows(null)),
    FILTER_NEGATIVE_INDEX("§5.3", INVALID_ARGUMENT, s -> !s.roundOpen(), (g, x) -> g.filterRows(new int[] {-1})),
    FILTER_INDEX_OUT_OF_RANGE("§5.3", INVALID_ARGUMENT, s -> !s.roundOpen(),
            (g, x) -> g.filterRows(new int[] {x.shape.rows()})),
    FILTER_REPEATED_INDEX("§5.3", INVALID_ARGUMENT, s -> !s.roundOpen() && s.rows() > 0,
            (g, x) -> g.filterRows(new int[] {0, 0})),
    FILTER_DURING_ROUND("§13.3", ILLEGAL_STATE, TargetShape::roundOpen, (g, x) -> g.filterRows(new int[0])),

    PREFILL_NULL_TOKENS("§11.1", INVALID_ARGUMENT, TargetBadCall::canFeed, (g, x) -> g.prefill(null)),
    PREFILL_WRONG_ROW_COUNT("§11.1", INVALID_ARGUMENT, TargetBadCall::canFeed,
            (g, x) -> g.prefill(x.tokens(x.shape.rows() + 1, 2))),
    PREFILL_ZERO_LENGTH("§13.3", INVALID_ARGUMENT, TargetBadCall::canFeed,
            (g, x) -> g.prefill(x.tokens(x.shape.rows(), 0))),
    PREFILL_NEGATIVE_TOKEN("§11.1", INVALID_ARGUMENT, TargetBadCall::canFeed,
            (g, x) -> g.prefill(x.withToken(x.shape.rows(), 2, -1))),
    PREFILL_TOKEN_OUT_OF_VOCAB("§11.1", INVALID_ARGUMENT, TargetBadCall::canFeed,
            (g, x) -> g.prefill(x.withToken(x.shape.rows(), 2, x.config().shape().vocabSize()))),
    PREFILL_FLOAT_TOKENS("§11.1", INVALID_ARGUMENT, TargetBadCall::canFeed,
            (g, x) -> g.prefill(HostTensor.ofFloats(new float[x.shape.rows() * 2], x.shape.rows(), 2))),
    PREFILL_DURING_ROUND("§13.3", ILLEGAL_STATE, TargetShape::roundOpen,
            (g, x) -> g.prefill(x.tokens(x.shape.rows(), 1))),
    PREFILL_NO_ROWS("§11.1", ILLEGAL_STATE, s -> !s.roundOpen() && s.rows() == 0,
            (g, x) -> g.prefill(x.tokens(0, 1))),

    VERIFY_NULL_TOKENS("§11.1", INVALID_ARGUMENT, TargetShape::canVerify, (g, x) -> g.verify(null)),
    VERIFY_WRONG_ROW_COUNT("§11.1", INVALID_ARGUMENT, TargetShape::canVerify,
            (g, x) -> g.verify(x.tokens(x.shape.rows() + 1, 2))),
    VERIFY_ZERO_WIDTH("§13.3", INVALID_ARGUMENT, TargetShape::canVerify,
            (g, x) -> g.verify(x.tokens(x.shape.rows(), 0))),
    VERIFY_TOO_WIDE("§13.3", INVALID_ARGUMENT, TargetShape::canVerify,
            (g, x) -> g.verify(x.tokens(x.shape.rows(), TargetContract.MAX_WIDTH + 1))),
    VERIFY_TOKEN_OUT_OF_VOCAB("§11.1", INVALID_ARGUMENT, TargetShape::canVerify,
            (g, x) -> g.verify(x.withToken(x.shape.rows(), 3, x.config().shape().vocabSize()))),
    VERIFY_NEGATIVE_TOKEN("§11.1", INVALID_ARGUMENT, TargetShape::canVerify,
            (g, x) -> g.verify(x.withToken(x.shape.rows(), 1, -1))),
    VERIFY_COLD_ROW("§13.3", ILLEGAL_STATE, s -> !s.roundOpen() && s.hasColdRow(),
            (g, x) -> g.verify(x.tokens(x.shape.rows(), 2))),
    VERIFY_DURING_ROUND("§13.3", ILLEGAL_STATE, TargetShape::roundOpen,
            (g, x) -> g.verify(x.tokens(x.shape.rows(), 1))),
    VERIFY_NO_ROWS("§11.1", ILLEGAL_STATE, s -> !s.roundOpen() && s.rows() == 0,
            (g, x) -> g.verify(x.tokens(0, 1))),

    COMMIT_WITHOUT_ROUND("§13.3", ILLEGAL_STATE, s -> !s.roundOpen(), (g, x) -> g.commit(new int[x.shape.rows()])),
    COMMIT_NULL_ACCEPTED("§13.3", INVALID_ARGUMENT, TargetShape::roundOpen, (g, x) -> g.commit(null)),
    COMMIT_ACCEPTED_WRONG_LENGTH("§13.3", INVALID_ARGUMENT, TargetShape::roundOpen,
            (g, x) -> g.commit(new int[x.shape.rows() + 1])),
    COMMIT_ACCEPTED_NEGATIVE("§13.3", INVALID_ARGUMENT, TargetShape::roundOpen, (g, x) -> {
        int[] acc = new int[x.shape.rows()];
        acc[x.rnd.nextInt(acc.length)] = -1;
        g.commit(acc);
    }),
    /** {@code W} accepted of a verify of width {@code W}: the pending token is not a draft (an off-by-one). */
    COMMIT_ACCEPTED_EQUALS_WIDTH("§13.3", INVALID_ARGUMENT, TargetShape::roundOpen, (g, x) -> {
        int[] acc = new int[x.shape.rows()];
        acc[x.rnd.nextInt(acc.length)] = x.shape.width();
        g.commit(acc);
    }),

    CAPTURE_NEGATIVE_ROW("§11.1", INVALID_ARGUMENT, s -> !s.roundOpen(), (g, x) -> g.capture(-1)),
    CAPTURE_ROW_OUT_OF_RANGE("§11.1", INVALID_ARGUMENT, s -> !s.roundOpen(), (g, x) -> g.capture(x.shape.rows())),
    CAPTURE_DURING_ROUND("§13.3", ILLEGAL_STATE, TargetShape::roundOpen, (g, x) -> g.capture(0)),
    CAPTURE_COLD_ROW("§13.3", ILLEGAL_STATE, s -> !s.roundOpen() && s.hasColdRow(), (g, x) -> {
        for (int r = 0; r < x.shape.rows(); r++) {
            if (!x.shape.warm(r)) {
                g.capture(r);
                return;
            }
        }
    });

    /** Applies the call to {@code group}. */
    @FunctionalInterface
    interface Invocation {
        void invoke(TargetRows group, Context ctx);
    }

    private final String rule;
    private final Kind expected;
    private final Predicate<TargetShape> applies;
    private final Invocation invocation;

    TargetBadCall(String rule, Kind expected, Predicate<TargetShape> applies, Invocation invocation) {
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
    public boolean appliesTo(TargetShape shape) {
        return applies.test(shape);
    }

    /** The call's name as its message must start: {@code append}, {@code filterRows}, …. */
    public String call() {
        String n = name().substring(0, name().indexOf('_')).toLowerCase();
        return n.equals("filter") ? "filterRows" : n;
    }

    /** Makes the call; the arguments are derived from {@code seed} and the state. */
    public void invoke(TargetRows group, TargetModel model, TargetShape shape, long seed) {
        invocation.invoke(group, new Context(model, shape, new SplittableRandom(seed)));
    }

    private static boolean canFeed(TargetShape s) {
        return !s.roundOpen() && s.rows() > 0;
    }

    /** Argument builders for the calls. */
    static final class Context {
        final TargetModel model;
        final TargetShape shape;
        final SplittableRandom rnd;

        Context(TargetModel model, TargetShape shape, SplittableRandom rnd) {
            this.model = model;
            this.shape = shape;
            this.rnd = rnd;
        }

        TargetConfig config() {
            return model.config();
        }

        int nGdn() {
            return config().count(TargetConfig.LayerType.LINEAR_ATTENTION);
        }

        int nFull() {
            return config().count(TargetConfig.LayerType.FULL_ATTENTION);
        }

        HostTensor tokens(int b, int l) {
            int[] v = new int[b * l];
            for (int i = 0; i < v.length; i++) {
                v[i] = rnd.nextInt(config().shape().vocabSize());
            }
            return HostTensor.ofInts(v, b, l);
        }

        /** Valid tokens {@code [b, l]} but one, which is {@code bad}. */
        HostTensor withToken(int b, int l, int bad) {
            int[] v = tokens(b, l).toIntArray();
            v[rnd.nextInt(v.length)] = bad;
            return HostTensor.ofInts(v, b, l);
        }

        /** Small finite values of {@code shape}, or null when its leading (layer) count is 0. */
        HostTensor random(int... shape) {
            if (shape[0] == 0) {
                return null;
            }
            int n = 1;
            for (int d : shape) {
                n *= d;
            }
            float[] v = new float[n];
            for (int i = 0; i < n; i++) {
                v[i] = (float) (rnd.nextDouble() - 0.5);
            }
            return HostTensor.ofFloats(v, shape);
        }

        /** A well-formed, sealed checkpoint of this target after {@code p} tokens (its values arbitrary). */
        TargetCheckpoint checkpoint(int p) {
            TargetConfig.Gdn d = config().gdn();
            MtpConfig a = config().shape();
            return TargetCheckpoint.sealed(p, model.identity(), random(nGdn(), d.convDim(), d.convKernel() - 1),
                    random(nGdn(), d.numValueHeads(), d.keyHeadDim(), d.valueHeadDim()),
                    random(nFull(), a.numKvHeads(), p, a.headDim()), random(nFull(), a.numKvHeads(), p, a.headDim()));
        }
    }

    /** Every call in a fixed order (for reports). */
    public static List<TargetBadCall> catalogue() {
        return Arrays.asList(values());
    }
}
