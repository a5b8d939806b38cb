package org.mtporacle.conformance.chain;

/**
 * What the chain engine knows of a group between actions: its rows, whether each has a retained hidden (has consumed
 * a target token and is not inside a round), and the open round's depth. Tracked from the spec's rules, never read
 * from a backend.
 */
public record GroupShape(boolean[] hasHidden, boolean roundOpen, int depth, int poolSize) {
    public GroupShape {
        hasHidden = hasHidden.clone();
    }

    public static GroupShape empty() {
        return new GroupShape(new boolean[0], false, 0, 0);
    }

    public int rows() {
        return hasHidden.length;
    }

    public boolean hasHidden(int row) {
        return hasHidden[row];
    }

    /** True when a prefill is valid: at least one row, no open round (spec §5.4). */
    public boolean canPrefill() {
        return !roundOpen && rows() > 0;
    }

    /** True when every row could draft: at least one row, all with a retained hidden, no open round. */
    public boolean canDraft() {
        if (roundOpen || rows() == 0) {
            return false;
        }
        for (boolean h : hasHidden) {
            if (!h) {
                return false;
            }
        }
        return true;
    }

    /** True when some row has never consumed a target token. */
    public boolean hasColdRow() {
        for (boolean h : hasHidden) {
            if (!h) {
                return true;
            }
        }
        return false;
    }

    public int capturableRows() {
        if (roundOpen) {
            return 0;
        }
        int n = 0;
        for (boolean h : hasHidden) {
            if (h) {
                n++;
            }
        }
        return n;
    }
}
