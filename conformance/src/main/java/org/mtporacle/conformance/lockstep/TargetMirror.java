package org.mtporacle.conformance.lockstep;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.TargetCheckpoint;
import org.mtporacle.api.TargetOutput;
import org.mtporacle.api.TargetRows;

import java.util.List;
import java.util.function.Supplier;

/**
 * One group of target rows that mirrors the reference drafter's rows through a chain, so that every context is the
 * target's own tap of the tokens the drafter sees (spec §13.4): row {@code b} of the target has processed exactly the
 * tokens row {@code b} of the drafter has consumed. The harness mirrors a call once the reference drafter has accepted
 * it; a prefill, whose context the target computes, runs first, when the group's shape says the call is valid:
 * <ul>
 *   <li>append: a cold drafter row is an empty target row, a restored one the target checkpoint captured with it;</li>
 *   <li>filterRows: the same keep list;</li>
 *   <li>prefill: a target prefill of the same tokens, whose taps are the context;</li>
 *   <li>draft: a verify of {@code [pending, drafts]} (the reference side's drafts) opens the target's round, and its
 *   taps {@code [B, d+1, H]} are the commit's context; commit closes it with the same accepted counts.</li>
 * </ul>
 * The target never refuses a call that its drafter twin accepted; if it does, the harness is wrong, and the run stops
 * with an {@link IllegalStateException}.
 */
final class TargetMirror implements AutoCloseable {
    private final TargetTaps taps;
    private final TargetRows rows;
    private TargetOutput round; // the open round's verify; null between rounds

    TargetMirror(TargetTaps taps) {
        this.taps = taps;
        this.rows = taps.target().openRows(List.of());
    }

    /** Appends empty rows (null) and restored rows, as the drafter just did. */
    void append(List<TargetCheckpoint> checkpoints) {
        run("append", () -> {
            rows.append(checkpoints);
            return null;
        });
    }

    void filterRows(int[] keep) {
        run("filterRows", () -> {
            rows.filterRows(keep);
            return null;
        });
    }

    /** Prefills {@code tokens [B, L]} and returns the taps {@code [B, L, H]}: the drafter's prefill context. */
    HostTensor prefill(HostTensor tokens) {
        return run("prefill", () -> rows.prefill(tokens)).taps(taps.tap());
    }

    /** Opens the round the drafter just opened: a verify of each row's pending token and its drafts. */
    void verify(int[] pending, int[][] drafts) {
        int[][] tokens = new int[pending.length][];
        for (int r = 0; r < pending.length; r++) {
            tokens[r] = new int[drafts[r].length + 1];
            tokens[r][0] = pending[r];
            System.arraycopy(drafts[r], 0, tokens[r], 1, drafts[r].length);
        }
        round = run("verify", () -> rows.verify(HostTensor.ofIntRows(tokens)));
    }

    /** The open round's taps {@code [B, d+1, H]}, the commit's context; null when no round is open. */
    HostTensor roundContext() {
        return round == null ? null : round.taps(taps.tap());
    }

    /** Closes the round as the drafter just did. */
    void commit(int[] accepted) {
        run("commit", () -> {
            rows.commit(accepted);
            return null;
        });
        round = null;
    }

    /** The target state of row {@code row}, captured beside the drafter's checkpoint of it. */
    TargetCheckpoint capture(int row) {
        return run("capture", () -> rows.capture(row));
    }

    @Override
    public void close() {
        rows.close();
    }

    private static <T> T run(String call, Supplier<T> body) {
        try {
            return body.get();
        } catch (MtpException e) {
            throw new IllegalStateException("target contexts: the reference target refused a " + call + " that the "
                    + "reference drafter accepts; the mirror of its rows is lost: " + e.getMessage(), e);
        }
    }
}
