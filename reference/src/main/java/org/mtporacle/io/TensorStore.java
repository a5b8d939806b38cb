package org.mtporacle.io;

import java.nio.file.Path;
import java.util.List;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;

/**
 * Named tensors read from one or more safetensors files: a single file ({@link SafetensorsFile}) or a directory of
 * shards ({@link ShardedTensorStore}). Tensors are zero-copy views that stay valid until {@link #close()}.
 */
public interface TensorStore extends AutoCloseable {
    /** Every tensor name, sorted. */
    List<String> names();

    /** True when a tensor called {@code name} exists. */
    boolean contains(String name);

    /**
     * The tensor called {@code name}, a view of the mapped file.
     *
     * @throws MtpException INVALID_ARGUMENT when there is no such tensor
     */
    HostTensor tensor(String name);

    /** The file that holds {@code name}. */
    Path fileOf(String name);

    /** The files of this store, sorted by file name. */
    List<Path> files();

    /** Unmaps every file; views obtained earlier must not be used afterwards. */
    @Override
    void close();

    /**
     * Opens a single {@code .safetensors} file or a directory ({@link ShardedTensorStore#open(Path)}).
     *
     * @throws MtpException MALFORMED_FILE when a file or the shard index is malformed
     */
    static TensorStore open(Path path) {
        return java.nio.file.Files.isDirectory(path) ? ShardedTensorStore.open(path) : SafetensorsFile.open(path);
    }
}
