package org.mtporacle.api;

/**
 * What a target forward returns (spec §13.3): logits at the positions the call names and both hidden taps at every
 * position it processed. Owned by the caller.
 *
 * @param logits   {@code [B, n, V]} F32: a verify's every position ({@code n = W}), a prefill's last ({@code n = 1})
 * @param preNorm  {@code [B, L, H]} F32 the last layer's output before the final norm, every processed position
 * @param postNorm {@code [B, L, H]} F32 after the final norm
 */
public record TargetOutput(HostTensor logits, HostTensor preNorm, HostTensor postNorm) {
    /** The taps of {@code tap}. */
    public HostTensor taps(HiddenTap tap) {
        return tap == HiddenTap.PRE_NORM ? preNorm : postNorm;
    }
}
