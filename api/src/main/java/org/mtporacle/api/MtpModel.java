package org.mtporacle.api;

import java.util.List;

/**
 * A loaded MTP model: config, weights in full-gain convention, and what the loader learned about the files.
 *
 * @param config     the block's shape parameters
 * @param weights    the weights, norms folded to full gains exactly once (spec §11.4)
 * @param identity   a stable content identity (SHA-256 hex over the config fingerprint and tensor bytes, spec §6);
 *                   checkpoints carry it and backends refuse checkpoints of another identity
 * @param source     where the model came from (a directory or a fixture recipe), for reports
 * @param layout     {@code "hf"} (raw Hugging Face, {@code mtp.} prefix, zero-centred norms) or {@code "companion"}
 * @param warnings   suspicious findings (for example a norm mean that looks folded twice); empty when none
 */
public record MtpModel(MtpConfig config, MtpWeights weights, String identity, String source, String layout,
                       List<String> warnings) {
    public MtpModel {
        warnings = List.copyOf(warnings);
    }
}
