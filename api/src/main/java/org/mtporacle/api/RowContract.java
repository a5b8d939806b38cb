package org.mtporacle.api;

import java.util.List;

/**
 * The argument checks of the row contract (spec §11.1), shared by every backend so that the same bad call fails
 * with the same kind and message everywhere. Each check throws {@link MtpException} naming the call, the row or index
 * and the offending value; none mutates anything.
 */
public final class RowContract {
    /** The deepest draft round a call may ask for; deeper rounds are refused before any work. */
    public static final int MAX_DEPTH = 64;
    /** The most drafter KV positions ({@code P − 1}) a row may hold, whatever the model (spec §11.13). */
    public static final int MAX_POSITIONS = 1 << 20;
    /**
     * The most elements one array of a call may need (spec §11.13): a row's cache {@code [nKV, P−1, D]} (a checkpoint
     * tensor), a context tensor, and one forward's activations (rows × positions × its widest per-token vector).
     */
    public static final long MAX_ELEMENTS = 1L << 30;
    /**
     * The largest magnitude of a hidden state a call may pass (context taps, a checkpoint's hidden), 2^51 (spec
     * §11.14): the block's RMSNorm sums squares in f32, and H ≤ 2^23 values of at most 2^51 sum to at most 2^125,
     * a factor 8 below f32's largest value (room for the sum's rounding), while a single value of about 1.8e19 already
     * squares to infinity.
     */
    public static final float MAX_HIDDEN = 0x1p51f;

    private RowContract() {
    }

    /** The most drafter positions a row of {@code c} may hold: {@link #MAX_POSITIONS}, fewer when nKV·D is wide. */
    public static int maxPositions(MtpConfig c) {
        return (int) Math.min(MAX_POSITIONS, MAX_ELEMENTS / ((long) c.numKvHeads() * c.headDim()));
    }

    /**
     * The widest per-token vector one forward of the block holds (spec §11.13): the fc input 2·H, q_proj with its gate
     * 2·nH·D, nKV·D, the MLP's width (dense I; MoE the widest of top-k·H, the expert count and the expert and shared
     * widths); the logits (V) only when {@code withLogits}.
     */
    public static long widestPerToken(MtpModel model, boolean withLogits) {
        MtpConfig c = model.config();
        long w = Math.max(2L * c.hiddenSize(), Math.max(2L * c.numHeads() * c.headDim(),
                (long) c.numKvHeads() * c.headDim()));
        w = Math.max(w, c.intermediateSize());
        if (model.weights() != null && model.weights().mlp() instanceof MlpWeights.Moe moe) {
            w = Math.max(w, Math.max((long) moe.topK() * c.hiddenSize(), moe.numExperts()));
            w = Math.max(w, Math.max(moe.expertWidth(), moe.sharedExpert() == null ? 0 : moe.sharedExpert().width()));
        }
        return withLogits ? Math.max(w, c.vocabSize()) : w;
    }

    /**
     * Fails (INVALID_ARGUMENT) when a row would hold more than {@link #maxPositions} drafter positions after the call:
     * row {@code b} holds {@code held[b]} and the call adds {@code added[b]} (spec §11.13).
     */
    public static void positions(String call, int[] held, int[] added, MtpConfig c, String what) {
        int max = maxPositions(c);
        for (int b = 0; b < held.length; b++) {
            long after = (long) held[b] + added[b];
            if (after > max) {
                throw MtpException.invalidArgument(call + ": row " + b + " holds " + held[b] + " drafter positions; "
                        + what + " would bring it to " + after + ", more than the " + max + " a row may hold (spec "
                        + "§11.13)");
            }
        }
    }

    /**
     * Fails (INVALID_ARGUMENT) when one forward of {@code rows × positions} tokens would hold more than
     * {@link #MAX_ELEMENTS} elements in one array (spec §11.13).
     */
    public static void forwardSize(String call, int rows, int positions, MtpModel model, boolean withLogits,
                                   String advice) {
        long w = widestPerToken(model, withLogits);
        long elements = (long) rows * positions * w; // each factor < 2^31 and w ≤ 2^26: no overflow
        if (elements > MAX_ELEMENTS) {
            throw MtpException.invalidArgument(call + ": one forward of " + rows + " rows × " + positions
                    + " positions × " + w + " values per token needs " + elements + " elements in one array, more "
                    + "than " + MAX_ELEMENTS + " (spec §11.13); " + advice);
        }
    }

    /** Fails when the group is closed or poisoned. */
    public static void checkUsable(String call, boolean closed, String poisonedBy) {
        if (closed) {
            throw MtpException.illegalState(call + ": the group is closed");
        }
        if (poisonedBy != null) {
            throw MtpException.illegalState(call + ": the group is poisoned by an earlier failure (" + poisonedBy
                    + "); discard it and open a new one (spec §9.2)");
        }
    }

    /** Fails when a round is open (membership, prefill, capture and draft need a committed boundary). */
    public static void checkNoOpenRound(String call, boolean roundOpen) {
        if (roundOpen) {
            throw MtpException.illegalState(call + ": a draft round is open; commit it first (spec §9.2)");
        }
    }

    /** Fails when no round is open (commit closes the round that draft opened). */
    public static void checkRoundOpen(String call, boolean roundOpen) {
        if (!roundOpen) {
            throw MtpException.illegalState(call + ": no draft round is open (spec §5.8)");
        }
    }

    /** Fails when the group has no rows. */
    public static void checkHasRows(String call, int rows) {
        if (rows == 0) {
            throw MtpException.illegalState(call + ": the group has no rows");
        }
    }

    /**
     * Checks {@code tokens [B, L]} (I32 or I64, {@code L ≥ 1}, ids in {@code [0, V)}) and returns them as
     * {@code int[B][L]}.
     */
    public static int[][] tokens(String call, HostTensor tokens, int rows, int vocab) {
        if (tokens == null) {
            throw MtpException.invalidArgument(call + ": tokens is null");
        }
        readable(call, "tokens", tokens);
        if (tokens.dtype() != DType.I32 && tokens.dtype() != DType.I64) {
            throw MtpException.invalidArgument(call + ": tokens dtype " + tokens.dtype() + ", expected I32 or I64");
        }
        if (tokens.rank() != 2 || tokens.dim(0) != rows) {
            throw MtpException.invalidArgument(call + ": tokens shape " + tokens.describe() + ", expected [" + rows
                    + ", L] (one row per group row, spec §5.4)");
        }
        int len = tokens.dim(1);
        if (len < 1) {
            throw MtpException.invalidArgument(call + ": tokens has L = 0 new positions, expected L ≥ 1 (spec §5.4)");
        }
        if (len > MAX_POSITIONS) {
            throw MtpException.invalidArgument(call + ": tokens has L = " + len + " positions, more than the "
                    + MAX_POSITIONS + " a row may hold (spec §11.13)");
        }
        int[][] out = new int[rows][len];
        for (int b = 0; b < rows; b++) {
            for (int t = 0; t < len; t++) {
                long id = tokens.getLong((long) b * len + t);
                if (id < 0 || id >= vocab) {
                    throw MtpException.invalidArgument(call + ": tokens[" + b + ", " + t + "] = " + id
                            + " outside the vocabulary [0, " + vocab + ")");
                }
                out[b][t] = (int) id;
            }
        }
        return out;
    }

    /** Checks {@code context [B, width, H]}: a float dtype, the exact shape, finite values. */
    public static void context(String call, HostTensor context, int rows, int width, int hidden, String widthRule) {
        if (context == null) {
            throw MtpException.invalidArgument(call + ": context is null");
        }
        readable(call, "context", context);
        if (!context.dtype().isFloating() || context.dtype() == DType.F64) {
            throw MtpException.invalidArgument(call + ": context dtype " + context.dtype()
                    + ", expected F32, F16 or BF16");
        }
        if (context.rank() != 3 || context.dim(0) != rows || context.dim(1) != width || context.dim(2) != hidden) {
            throw MtpException.invalidArgument(call + ": context shape " + context.describe() + ", expected ["
                    + rows + ", " + width + ", " + hidden + "] (" + widthRule + ")");
        }
        if (context.elementCount() > MAX_ELEMENTS) {
            throw MtpException.invalidArgument(call + ": context has " + context.elementCount() + " elements, more "
                    + "than the " + MAX_ELEMENTS + " one call may pass (spec §11.13); split it into shorter calls");
        }
        long n = context.elementCount();
        for (long i = 0; i < n; i++) {
            float v = context.getFloat(i);
            if (!Float.isFinite(v) || Math.abs(v) > MAX_HIDDEN) {
                long per = (long) width * hidden;
                throw MtpException.invalidArgument(call + ": context[" + (i / per) + ", " + (i % per / hidden) + ", "
                        + (i % hidden) + "] (row " + (i / per) + ", position " + (i % per / hidden) + ") = " + v
                        + (Float.isFinite(v) ? ", magnitude above 2^51, where the block's f32 RMSNorm sum of squares "
                        + "could overflow (spec §11.14)" : " is not finite"));
            }
        }
    }

    /** Checks draft arguments: pending ids, depth, steps and one sampler per row. */
    public static void draftArguments(int[] pending, int depth, long[] steps, DraftSampling sampling, int rows,
                                      int vocab) {
        String call = "draft";
        if (pending == null || steps == null || sampling == null) {
            throw MtpException.invalidArgument(call + ": pending, steps and sampling must not be null");
        }
        if (pending.length != rows) {
            throw MtpException.invalidArgument(call + ": pending has " + pending.length + " entries, expected "
                    + rows + " (one per row)");
        }
        for (int b = 0; b < rows; b++) {
            if (pending[b] < 0 || pending[b] >= vocab) {
                throw MtpException.invalidArgument(call + ": pending[" + b + "] = " + pending[b]
                        + " outside the vocabulary [0, " + vocab + ")");
            }
        }
        if (depth < 0 || depth > MAX_DEPTH) {
            throw MtpException.invalidArgument(call + ": depth = " + depth + " outside [0, " + MAX_DEPTH + "]");
        }
        if (steps.length != rows) {
            throw MtpException.invalidArgument(call + ": steps has " + steps.length + " entries, expected " + rows);
        }
        for (int b = 0; b < rows; b++) {
            if (steps[b] < 0) {
                throw MtpException.invalidArgument(call + ": steps[" + b + "] = " + steps[b] + " is negative");
            }
        }
        if (sampling.rowCount() != rows) {
            throw MtpException.invalidArgument(call + ": sampling has " + sampling.rowCount()
                    + " row samplers, expected " + rows);
        }
    }

    /** Checks {@code accepted [B]} with {@code 0 ≤ accepted[b] ≤ depth}. */
    public static void accepted(int[] accepted, int rows, int depth) {
        if (accepted == null) {
            throw MtpException.invalidArgument("commit: accepted is null");
        }
        if (accepted.length != rows) {
            throw MtpException.invalidArgument("commit: accepted has " + accepted.length + " entries, expected "
                    + rows + " (one per row)");
        }
        for (int b = 0; b < rows; b++) {
            if (accepted[b] < 0 || accepted[b] > depth) {
                throw MtpException.invalidArgument("commit: accepted[" + b + "] = " + accepted[b]
                        + " outside [0, " + depth + "], the draft depth (spec §5.8); rows unchanged");
            }
        }
    }

    /** Checks filter indices: each in {@code [0, rows)}, none repeated. */
    public static void keep(int[] keep, int rows) {
        if (keep == null) {
            throw MtpException.invalidArgument("filterRows: keep is null");
        }
        boolean[] seen = new boolean[rows];
        for (int i = 0; i < keep.length; i++) {
            int r = keep[i];
            if (r < 0 || r >= rows) {
                throw MtpException.invalidArgument("filterRows: keep[" + i + "] = " + r + " outside [0, " + rows
                        + ")");
            }
            if (seen[r]) {
                throw MtpException.invalidArgument("filterRows: keep[" + i + "] = " + r + " repeats a row");
            }
            seen[r] = true;
        }
    }

    /** Checks a row index. */
    public static void row(String call, int row, int rows) {
        if (row < 0 || row >= rows) {
            throw MtpException.invalidArgument(call + ": row " + row + " outside [0, " + rows + ")");
        }
    }

    /**
     * Checks a checkpoint against the model (spec §6, §11.1): schema, identity, {@code draftOffset == P − 1},
     * shapes and dtypes of keys, values and hidden, finite values, and last its content digest (a relabelled or
     * edited checkpoint, or one without a digest, is refused).
     *
     * @param index its position in the append list, for the message
     */
    public static void checkpoint(String call, int index, RowCheckpoint cp, MtpModel model) {
        String where = call + ": checkpoint[" + index + "]";
        MtpConfig c = model.config();
        if (!RowCheckpoint.SCHEMA.equals(cp.schema())) {
            throw MtpException.incompatibleCheckpoint(where + " has schema '" + cp.schema() + "', expected '"
                    + RowCheckpoint.SCHEMA + "' (spec §6)");
        }
        if (!model.identity().equals(cp.modelIdentity())) {
            throw MtpException.incompatibleCheckpoint(where + " belongs to model " + abbreviate(cp.modelIdentity())
                    + ", this group's model is " + abbreviate(model.identity()));
        }
        int p = cp.processedTokens();
        if (p < 1 || cp.draftOffset() != p - 1) {
            throw MtpException.incompatibleCheckpoint(where + " has invalid paired alignment: draftOffset = "
                    + cp.draftOffset() + " with processedTokens = " + p + ", expected draftOffset = P − 1 (spec §6)");
        }
        if (p - 1 > maxPositions(c)) {
            throw MtpException.incompatibleCheckpoint(where + " has P − 1 = " + (p - 1) + " positions, more than the "
                    + maxPositions(c) + " a row of this model may hold (spec §11.13)");
        }
        int[] kvShape = {1, c.numKvHeads(), p - 1, c.headDim()};
        if (p == 1) {
            if (cp.keys() != null || cp.values() != null) {
                throw MtpException.incompatibleCheckpoint(where + " has P = 1 but carries keys/values (spec §6)");
            }
        } else {
            tensor(where, "keys", cp.keys(), kvShape);
            tensor(where, "values", cp.values(), kvShape);
        }
        tensor(where, "hidden", cp.hidden(), new int[] {1, 1, c.hiddenSize()});
        if (cp.digest() == null) {
            throw MtpException.incompatibleCheckpoint(where + " carries no content digest; a checkpoint comes from a "
                    + "capture, or from a file or peer that kept its digest (spec §6)");
        }
        if (!cp.digestMatches()) {
            throw MtpException.incompatibleCheckpoint(where + " does not match its content digest: its label (schema, "
                    + "P, draftOffset, model identity) or its tensors were changed after capture (spec §6)");
        }
    }

    private static void tensor(String where, String name, HostTensor t, int[] shape) {
        if (t == null) {
            throw MtpException.incompatibleCheckpoint(where + " has no " + name + " tensor");
        }
        readable(where, name, t);
        if (!t.dtype().isFloating() || t.dtype() == DType.F64) {
            throw MtpException.incompatibleCheckpoint(where + " " + name + " dtype " + t.dtype()
                    + ", expected F32, F16 or BF16");
        }
        if (!java.util.Arrays.equals(t.shape(), shape)) {
            throw MtpException.incompatibleCheckpoint(where + " " + name + " shape " + t.describe() + ", expected "
                    + java.util.Arrays.toString(shape));
        }
        long n = t.elementCount();
        boolean isHidden = name.equals("hidden");
        for (long i = 0; i < n; i++) {
            float v = t.getFloat(i);
            if (!Float.isFinite(v)) {
                throw MtpException.incompatibleCheckpoint(where + " " + name + " element " + i + " is not finite");
            }
            if (isHidden && Math.abs(v) > MAX_HIDDEN) {
                throw MtpException.incompatibleCheckpoint(where + " hidden element " + i + " = " + v + ", magnitude "
                        + "above 2^51, where the block's f32 RMSNorm sum of squares could overflow (spec §11.14)");
            }
        }
    }

    /** Checks every checkpoint of an append list before anything is built (null = cold row). */
    public static void checkpoints(String call, List<RowCheckpoint> checkpoints, MtpModel model) {
        if (checkpoints == null) {
            throw MtpException.invalidArgument(call + ": checkpoint list is null (use null entries for cold rows)");
        }
        for (int i = 0; i < checkpoints.size(); i++) {
            RowCheckpoint cp = checkpoints.get(i);
            if (cp != null) {
                checkpoint(call, i, cp, model);
            }
        }
    }

    /**
     * Fails when {@code t}'s memory cannot be read here: a view into a file or arena that was closed, or into an
     * arena confined to another thread (reading it would throw outside the contract's exceptions).
     */
    static void readable(String where, String name, HostTensor t) {
        java.lang.foreign.MemorySegment data = t.data();
        if (!data.scope().isAlive()) {
            throw MtpException.invalidArgument(where + ": " + name + " cannot be read: its memory was released (the "
                    + "file or arena holding it is closed)");
        }
        if (!data.isAccessibleBy(Thread.currentThread())) {
            throw MtpException.invalidArgument(where + ": " + name + " cannot be read from this thread (its arena is "
                    + "confined to another thread)");
        }
    }

    static String abbreviate(String identity) {
        return identity.length() > 12 ? identity.substring(0, 12) + "…" : identity;
    }
}
