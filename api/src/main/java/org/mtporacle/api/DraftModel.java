package org.mtporacle.api;

import java.util.List;

/** A model loaded into a backend, ready to open row groups. Closing it releases the backend's copy of the weights. */
public interface DraftModel extends AutoCloseable {

    /** The model as loaded (config, identity, source). */
    MtpModel model();

    /** What this backend computes in, for reports ({@code "f32 vector (AVX-512, 16 lanes)"}, {@code "mlx cpu bf16"}). */
    String numerics();

    /**
     * Opens a group with one row per checkpoint (null = cold row), all or nothing (spec §5.11).
     *
     * @throws MtpException as {@link DraftRows#append}
     */
    DraftRows openRows(List<RowCheckpoint> checkpoints);

    @Override
    void close();
}
