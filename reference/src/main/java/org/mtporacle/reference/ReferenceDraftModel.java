package org.mtporacle.reference;

import org.mtporacle.reference.block.BlockForward;
import org.mtporacle.reference.block.MtpBlock;
import org.mtporacle.reference.block.TargetHead;
import org.mtporacle.api.DraftModel;
import org.mtporacle.api.DraftRows;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.MtpWeights;
import org.mtporacle.api.RowCheckpoint;
import org.mtporacle.reference.kernels.Kernels;

import java.util.List;

/**
 * A model loaded into the reference: the block and target head over the caller's weights, without copies when they
 * are in native memory (mapped files, arenas); in-memory tensors on the Java heap are copied off-heap once
 * ({@link Kernels#offHeap}), since the vector kernels read heap segments through a slow path.
 */
public final class ReferenceDraftModel implements DraftModel {
    private final MtpModel model;
    private final Kernels kernels;
    private final BlockForward block;
    private final TargetHead head;
    private volatile boolean closed;
    /** Calls compute under the read lock; {@link #close} takes the write lock, so it waits for a running call. */
    private final java.util.concurrent.locks.ReentrantReadWriteLock computing =
            new java.util.concurrent.locks.ReentrantReadWriteLock();

    public ReferenceDraftModel(MtpModel model, Kernels kernels) {
        this(model, kernels, Kernels.offHeap(model.weights()));
    }

    private ReferenceDraftModel(MtpModel model, Kernels kernels, MtpWeights resident) {
        this(model, kernels, new MtpBlock(model.config(), resident, kernels), resident);
    }

    /** A model whose lifecycle runs over another block (lifecycle tests substitute a fake, spec §1.9). */
    ReferenceDraftModel(MtpModel model, Kernels kernels, BlockForward block) {
        this(model, kernels, block, Kernels.offHeap(model.weights()));
    }

    private ReferenceDraftModel(MtpModel model, Kernels kernels, BlockForward block, MtpWeights resident) {
        this.model = model;
        this.kernels = kernels;
        this.block = block;
        this.head = new TargetHead(resident, kernels);
    }

    @Override
    public MtpModel model() {
        return model;
    }

    @Override
    public String numerics() {
        return "f32 (" + kernels.describe() + ")";
    }

    @Override
    public DraftRows openRows(List<RowCheckpoint> checkpoints) {
        return openReferenceRows(checkpoints);
    }

    /** {@link #openRows} typed as the reference group, which also offers {@link DraftChooser} drafting. */
    public ReferenceDraftRows openReferenceRows(List<RowCheckpoint> checkpoints) {
        if (closed) {
            throw MtpException.illegalState("openRows: the model is closed");
        }
        ReferenceDraftRows rows = new ReferenceDraftRows(this);
        rows.append(checkpoints);
        return rows;
    }

    /** True once {@link #close()} ran; the model's groups then refuse every call (spec §11.11). */
    public boolean isClosed() {
        return closed;
    }

    BlockForward block() {
        return block;
    }

    public TargetHead head() {
        return head;
    }

    public Kernels kernels() {
        return kernels;
    }

    /**
     * Runs a group's computation while the model is open: {@link #close} waits for it, and a call that reaches its
     * computation after the close fails with ILLEGAL_STATE (spec §11.11) before touching the released kernels.
     */
    <T> T compute(String call, java.util.function.Supplier<T> work) {
        computing.readLock().lock();
        try {
            if (closed) {
                throw MtpException.illegalState(call + ": the model this group was opened from was closed; a group "
                        + "cannot outlive its model (spec §11.11)");
            }
            return work.get();
        } finally {
            computing.readLock().unlock();
        }
    }

    /** Closes the model after any call computing on one of its groups has finished. */
    @Override
    public void close() {
        computing.writeLock().lock();
        try {
            if (!closed) {
                closed = true;
                kernels.close();
            }
        } finally {
            computing.writeLock().unlock();
        }
    }
}
