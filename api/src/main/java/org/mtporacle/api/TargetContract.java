package org.mtporacle.api;

import java.util.Arrays;
import java.util.List;

/**
 * The argument checks of the target row contract (spec §13.3), shared by every backend so that the same bad call fails
 * with the same kind and message everywhere; the checks the drafter's contract already has (tokens, rows, keep lists,
 * a closed or poisoned group) are {@link RowContract}'s. None mutates anything.
 */
public final class TargetContract {
    /** The widest verify: the pending token and {@link RowContract#MAX_DEPTH} drafts. */
    public static final int MAX_WIDTH = RowContract.MAX_DEPTH + 1;

    private TargetContract() {
    }

    /** The most tokens a row of {@code c} may process: {@link RowContract#MAX_POSITIONS}, fewer when nKV·D is wide. */
    public static int maxPositions(TargetConfig c) {
        return RowContract.maxPositions(c.shape());
    }

    /** Fails when a round is open (membership, prefill, capture and verify need a committed boundary). */
    public static void checkNoOpenRound(String call, boolean roundOpen) {
        if (roundOpen) {
            throw MtpException.illegalState(call + ": a verify round is open; commit it first (spec §13.3)");
        }
    }

    /** Fails when no round is open (commit closes the round that verify opened). */
    public static void checkRoundOpen(String call, boolean roundOpen) {
        if (!roundOpen) {
            throw MtpException.illegalState(call + ": no verify round is open (spec §13.3)");
        }
    }

    /** Fails when a verify is wider than {@link #MAX_WIDTH}. */
    public static void width(String call, int width) {
        if (width > MAX_WIDTH) {
            throw MtpException.invalidArgument(call + ": width W = " + width + " tokens per row, more than the "
                    + MAX_WIDTH + " a verify may take (the pending token and at most " + RowContract.MAX_DEPTH
                    + " drafts, spec §13.3)");
        }
    }

    /** Fails when a row has processed no token (a verify continues a prefilled row). */
    public static void warm(String call, int[] processed, String why) {
        for (int b = 0; b < processed.length; b++) {
            if (processed[b] == 0) {
                throw MtpException.illegalState(call + ": row " + b + " has processed no token; " + why
                        + " (spec §13.3)");
            }
        }
    }

    /** Checks {@code accepted [B]}, each in {@code [0, W − 1]} (spec §13.3). */
    public static void accepted(int[] accepted, int rows, int width) {
        if (accepted == null) {
            throw MtpException.invalidArgument("commit: accepted is null");
        }
        if (accepted.length != rows) {
            throw MtpException.invalidArgument("commit: accepted has " + accepted.length + " entries, expected " + rows
                    + " (one per row)");
        }
        for (int b = 0; b < rows; b++) {
            if (accepted[b] < 0 || accepted[b] > width - 1) {
                throw MtpException.invalidArgument("commit: accepted[" + b + "] = " + accepted[b] + " outside [0, "
                        + (width - 1) + "], the drafts of a verify of width " + width + " (spec §13.3); rows unchanged");
            }
        }
    }

    /** Fails when a row would process more than {@link #maxPositions} tokens. */
    public static void positions(String call, int[] held, int added, TargetConfig c) {
        int max = maxPositions(c);
        for (int b = 0; b < held.length; b++) {
            long after = (long) held[b] + added;
            if (after > max) {
                throw MtpException.invalidArgument(call + ": row " + b + " has processed " + held[b] + " tokens; "
                        + added + " more would bring it to " + after + ", more than the " + max + " a row may hold "
                        + "(spec §11.13)");
            }
        }
    }

    /** Fails when one forward of {@code rows × positions} tokens would hold more than the bound in one array. */
    public static void forwardSize(String call, int rows, int positions, TargetConfig c, String advice) {
        MtpConfig s = c.shape();
        TargetConfig.Gdn g = c.gdn();
        long w = Math.max(Math.max(2L * s.numHeads() * s.headDim(), g.convDim() + g.valueDim()),
                Math.max(s.intermediateSize(), s.hiddenSize()));
        long elements = (long) rows * positions * w;
        if (elements > RowContract.MAX_ELEMENTS) {
            throw MtpException.invalidArgument(call + ": one forward of " + rows + " rows × " + positions
                    + " positions × " + w + " values per token needs " + elements + " elements in one array, more "
                    + "than " + RowContract.MAX_ELEMENTS + " (spec §11.13); " + advice);
        }
    }

    /** Checks every checkpoint of an append list before anything is built (null = an empty row). */
    public static void checkpoints(String call, List<TargetCheckpoint> checkpoints, TargetModel model) {
        if (checkpoints == null) {
            throw MtpException.invalidArgument(call + ": checkpoint list is null (use null entries for empty rows)");
        }
        for (int i = 0; i < checkpoints.size(); i++) {
            TargetCheckpoint cp = checkpoints.get(i);
            if (cp != null) {
                checkpoint(call, i, cp, model);
            }
        }
    }

    /**
     * Checks a target checkpoint against the model (spec §13.3): schema, identity, {@code P}, the four tensors' shapes
     * (F32, finite), and last its content digest.
     */
    public static void checkpoint(String call, int index, TargetCheckpoint cp, TargetModel model) {
        String where = call + ": checkpoint[" + index + "]";
        TargetConfig c = model.config();
        if (!TargetCheckpoint.SCHEMA.equals(cp.schema())) {
            throw MtpException.incompatibleCheckpoint(where + " has schema " + UntrustedText.quote(cp.schema())
                    + ", expected '" + TargetCheckpoint.SCHEMA + "' (spec §13.3)");
        }
        if (!model.identity().equals(cp.modelIdentity())) {
            throw MtpException.incompatibleCheckpoint(where + " belongs to target "
                    + UntrustedText.quote(RowContract.abbreviate(cp.modelIdentity())) + ", this group's target is "
                    + RowContract.abbreviate(model.identity()));
        }
        int p = cp.processedTokens();
        if (p < 1 || p > maxPositions(c)) {
            throw MtpException.incompatibleCheckpoint(where + " has P = " + p + " processed tokens, outside [1, "
                    + maxPositions(c) + "] (spec §13.3)");
        }
        TargetConfig.Gdn g = c.gdn();
        int nGdn = c.count(TargetConfig.LayerType.LINEAR_ATTENTION);
        int nFull = c.count(TargetConfig.LayerType.FULL_ATTENTION);
        MtpConfig s = c.shape();
        tensor(where, "convWindows", cp.convWindows(), nGdn, nGdn, g.convDim(), g.convKernel() - 1);
        tensor(where, "recurrentStates", cp.recurrentStates(), nGdn, nGdn, g.numValueHeads(), g.keyHeadDim(),
                g.valueHeadDim());
        tensor(where, "keys", cp.keys(), nFull, nFull, s.numKvHeads(), p, s.headDim());
        tensor(where, "values", cp.values(), nFull, nFull, s.numKvHeads(), p, s.headDim());
        if (cp.digest() == null) {
            throw MtpException.incompatibleCheckpoint(where + " carries no content digest; a checkpoint comes from a "
                    + "capture, or from a file or peer that kept its digest (spec §13.3)");
        }
        if (!cp.digestMatches()) {
            throw MtpException.incompatibleCheckpoint(where + " does not match its content digest: its label (schema, "
                    + "P, model identity) or its tensors were changed after capture (spec §13.3)");
        }
    }

    /** A checkpoint tensor: absent when {@code layers == 0}, else F32 of {@code shape}, every element finite. */
    private static void tensor(String where, String name, HostTensor t, int layers, int... shape) {
        if (layers == 0) {
            if (t != null) {
                throw MtpException.incompatibleCheckpoint(where + " carries " + name + " but the target has no layer "
                        + "that holds them");
            }
            return;
        }
        if (t == null) {
            throw MtpException.incompatibleCheckpoint(where + " has no " + name + " tensor");
        }
        RowContract.readable(where, name, t);
        if (t.dtype() != DType.F32) {
            throw MtpException.incompatibleCheckpoint(where + " " + name + " dtype " + t.dtype() + ", expected F32");
        }
        if (!Arrays.equals(t.shape(), shape)) {
            throw MtpException.incompatibleCheckpoint(where + " " + name + " shape " + t.describe() + ", expected "
                    + Arrays.toString(shape));
        }
        long n = t.elementCount();
        for (long i = 0; i < n; i++) {
            if (!Float.isFinite(t.getFloat(i))) {
                throw MtpException.incompatibleCheckpoint(where + " " + name + " element " + i + " is not finite");
            }
        }
    }
}
