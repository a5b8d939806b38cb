package org.mtporacle.conformance.chain;

import org.mtporacle.api.HiddenTap;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;

/**
 * Where the hiddens a chain feeds to {@code prefill} and {@code commit} come from: a declared choice of every run,
 * printed in its report and recorded in its traces. Both sides of a lockstep run always receive the same contexts.
 */
public sealed interface ContextSource {
    /** Seeded N(0, 1) hiddens rounded to bf16 ({@link ChainData#hiddens}): no target involved. */
    ContextSource SYNTHETIC = new Synthetic();

    /** {@code "synthetic"} or {@code "target"}, as options and traces spell it. */
    String label();

    /** The tap, or null for synthetic contexts. */
    HiddenTap tap();

    /** The text reports print after {@code contexts:}. */
    String describe();

    /** Seeded N(0, 1) hiddens rounded to bf16. */
    record Synthetic() implements ContextSource {
        @Override
        public String label() {
            return "synthetic";
        }

        @Override
        public HiddenTap tap() {
            return null;
        }

        @Override
        public String describe() {
            return "synthetic: seeded N(0,1) hiddens rounded to bf16 (no target tap)";
        }
    }

    /**
     * The fixture's reference target run on the chain's own tokens (spec §13.4): a prefill's context is the taps of a
     * target prefill of the same tokens, a commit's context the taps of a target verify of the pending tokens and the
     * reference's drafts, at the declared tap.
     */
    record Target(HiddenTap tap) implements ContextSource {
        public Target {
            if (tap == null) {
                throw new IllegalArgumentException("target contexts need a tap");
            }
        }

        @Override
        public String label() {
            return "target";
        }

        @Override
        public String describe() {
            return "target reference (tap " + tap.label() + "): the fixture's hybrid target on the chain's own tokens "
                    + "(spec §13.4)";
        }
    }

    /**
     * The source called {@code label}, with {@code tap} ({@code pre} or {@code post}; null: {@code post}) for target
     * contexts.
     *
     * @throws MtpException INVALID_ARGUMENT for an unknown label or tap, or a tap given with synthetic contexts
     */
    static ContextSource of(String label, String tap) {
        return switch (label) {
            case "synthetic" -> {
                if (tap != null) {
                    throw MtpException.invalidArgument("--tap " + UntrustedText.quote(tap) + ": a tap needs "
                            + "--contexts target (synthetic contexts have none)");
                }
                yield SYNTHETIC;
            }
            case "target" -> new Target(HiddenTap.of(tap == null ? "post" : tap));
            default -> throw MtpException.invalidArgument("--contexts " + UntrustedText.quote(label)
                    + ": expected synthetic or target");
        };
    }
}
