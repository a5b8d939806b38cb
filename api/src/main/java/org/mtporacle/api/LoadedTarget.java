package org.mtporacle.api;

import java.util.List;

/**
 * A hybrid target loaded into a backend, ready to open target row groups (spec §13.3): the target's {@link DraftModel}.
 * Closing it releases the backend's copy of the weights.
 */
public interface LoadedTarget extends AutoCloseable {

    /** The target as loaded (config, identity, source). */
    TargetModel model();

    /** What this backend computes in, for reports. */
    String numerics();

    /**
     * Opens a group with one row per checkpoint (null = an empty row), all or nothing.
     *
     * @throws MtpException as {@link TargetRows#append}
     */
    TargetRows openRows(List<TargetCheckpoint> checkpoints);

    @Override
    void close();
}
