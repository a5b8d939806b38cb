package org.mtporacle.api;

/**
 * Which hidden of the target feeds the MTP drafter (spec §11.3, §13.4): a declared parameter of every run, printed in
 * every report, because engines differ and the choice shows only as acceptance.
 */
public enum HiddenTap {
    /** The last layer's output before the final norm (the original design, mlx-vlm). */
    PRE_NORM("pre"),
    /** After the final norm (vLLM, SGLang and llama.cpp for Qwen3.5). */
    POST_NORM("post");

    private final String label;

    HiddenTap(String label) {
        this.label = label;
    }

    /** {@code "pre"} or {@code "post"}, as options and reports spell it. */
    public String label() {
        return label;
    }

    /** The tap labelled {@code label}. */
    public static HiddenTap of(String label) {
        for (HiddenTap t : values()) {
            if (t.label.equals(label)) {
                return t;
            }
        }
        throw MtpException.invalidArgument("tap: " + UntrustedText.quote(label) + ", expected pre or post");
    }
}
