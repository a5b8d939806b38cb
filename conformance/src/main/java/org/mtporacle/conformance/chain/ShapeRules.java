package org.mtporacle.conformance.chain;

/**
 * How each action changes a group's {@link GroupShape} under the spec's rules (§5), given whether the call is valid.
 * The generator uses it to propose mostly valid chains; the lockstep runner uses it to know which rows to compare.
 */
public final class ShapeRules {
    private ShapeRules() {
    }

    /** The shape after {@code action} succeeds; an action that must fail leaves the shape as it is. */
    public static GroupShape next(GroupShape s, Action action) {
        return switch (action) {
            case Action.Append a -> {
                if (s.roundOpen()) {
                    yield s;
                }
                boolean[] h = java.util.Arrays.copyOf(s.hasHidden(), s.rows() + a.slots().size());
                for (int i = 0; i < a.slots().size(); i++) {
                    h[s.rows() + i] = a.slots().get(i) >= 0 && s.poolSize() > 0;
                }
                yield new GroupShape(h, false, 0, s.poolSize());
            }
            case Action.Filter f -> {
                if (s.roundOpen()) {
                    yield s;
                }
                int[] keep = ChainData.keep(f.seed(), s.rows(), f.keepAll());
                boolean[] h = new boolean[keep.length];
                for (int i = 0; i < keep.length; i++) {
                    h[i] = s.hasHidden(keep[i]);
                }
                yield new GroupShape(h, false, 0, s.poolSize());
            }
            case Action.Prefill p -> !s.canPrefill() || p.length() < 1 ? s
                    : new GroupShape(filled(s.rows(), true), false, 0, s.poolSize());
            case Action.Draft d -> !s.canDraft() || d.depth() < 0 ? s
                    : new GroupShape(filled(s.rows(), false), true, d.depth(), s.poolSize());
            case Action.Commit c -> !s.roundOpen() ? s
                    : new GroupShape(filled(s.rows(), true), false, 0, s.poolSize());
            case Action.Capture c -> s.capturableRows() == 0 ? s
                    : new GroupShape(s.hasHidden(), s.roundOpen(), s.depth(), s.poolSize() + 1);
            case Action.Bad b -> s;
        };
    }

    private static boolean[] filled(int n, boolean v) {
        boolean[] a = new boolean[n];
        java.util.Arrays.fill(a, v);
        return a;
    }
}
