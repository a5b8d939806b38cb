package org.mtporacle.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;

/**
 * Writes a safetensors file: tensors are laid out <b>sorted by name</b> (so the bytes do not depend on the order of
 * {@code add} calls), {@code __metadata__} keys sorted, and the JSON header padded with spaces to a multiple of 8
 * bytes so the data section starts 8-byte aligned. Large tensors can be streamed with {@link TensorBytes}.
 */
public final class SafetensorsWriter {
    /** Streams exactly a tensor's bytes (little-endian, row-major) into {@code out}. */
    @FunctionalInterface
    public interface TensorBytes {
        void writeTo(WritableByteChannel out) throws IOException;
    }

    private record Entry(DType dtype, int[] shape, long byteSize, TensorBytes bytes) {
    }

    private final Map<String, Entry> entries = new TreeMap<>();
    private final Map<String, String> metadata = new TreeMap<>();

    /** Adds a {@code __metadata__} entry. */
    public SafetensorsWriter metadata(String key, String value) {
        metadata.put(key, value);
        return this;
    }

    /**
     * Adds {@code tensor} under {@code name}.
     *
     * @throws MtpException INVALID_ARGUMENT when the name is taken or reserved
     */
    public SafetensorsWriter add(String name, HostTensor tensor) {
        return add(name, tensor.dtype(), tensor.shape(), out -> writeFully(out, tensor.data().asByteBuffer()));
    }

    /** Adds a tensor whose bytes are produced by {@code bytes} while the file is written. */
    public SafetensorsWriter add(String name, DType dtype, int[] shape, TensorBytes bytes) {
        if (name.equals("__metadata__") || entries.containsKey(name)) {
            throw MtpException.invalidArgument("safetensors write: tensor name '" + name + "' is "
                    + (entries.containsKey(name) ? "already used" : "reserved"));
        }
        long n = dtype.byteSize();
        for (int d : shape) {
            if (d < 0) {
                throw MtpException.invalidArgument("safetensors write: tensor '" + name + "' has negative dim in "
                        + Arrays.toString(shape));
            }
            n = Math.multiplyExact(n, d);
        }
        entries.put(name, new Entry(dtype, shape.clone(), n, bytes));
        return this;
    }

    /**
     * Writes the file, replacing any existing one: into a temporary file beside it, then renamed over it atomically,
     * so a reader (a mapping of the old file, which may be this writer's own source) never sees a partial file.
     */
    public void write(Path path) {
        Path abs = path.toAbsolutePath();
        // a fresh name created like any output (CREATE_NEW, the process's umask), not a 0600 temporary file
        Path tmp = abs.resolveSibling("." + abs.getFileName() + "." + Long.toUnsignedString(
                java.util.concurrent.ThreadLocalRandom.current().nextLong(), 36) + ".tmp");
        try {
            writeTo(tmp, path);
            java.nio.file.Files.move(tmp, abs, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                    java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new MtpException(MtpException.Kind.MALFORMED_FILE, "safetensors write " + path + ": " + e, e);
        } finally {
            try {
                java.nio.file.Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // the rename took it, or the failure above is the one to report
            }
        }
    }

    private void writeTo(Path file, Path path) {
        byte[] header = header();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, header.length);
            writeFully(ch, len);
            writeFully(ch, ByteBuffer.wrap(header));
            for (Map.Entry<String, Entry> e : entries.entrySet()) {
                long before = ch.position();
                e.getValue().bytes().writeTo(ch);
                long written = ch.position() - before;
                if (written != e.getValue().byteSize()) {
                    throw MtpException.invalidArgument("safetensors write " + path + ": tensor '" + e.getKey()
                            + "' wrote " + written + " bytes, expected " + e.getValue().byteSize());
                }
            }
        } catch (IOException e) {
            throw new MtpException(MtpException.Kind.MALFORMED_FILE, "safetensors write " + path + ": " + e, e);
        }
    }

    private byte[] header() {
        ObjectNode root = SafetensorsFile.JSON.createObjectNode();
        if (!metadata.isEmpty()) {
            ObjectNode m = root.putObject("__metadata__");
            metadata.forEach(m::put);
        }
        long offset = 0;
        for (Map.Entry<String, Entry> e : entries.entrySet()) {
            Entry t = e.getValue();
            ObjectNode o = root.putObject(e.getKey());
            o.put("dtype", t.dtype().safetensorsName());
            ArrayNode s = o.putArray("shape");
            for (int d : t.shape()) {
                s.add(d);
            }
            o.putArray("data_offsets").add(offset).add(offset + t.byteSize());
            offset += t.byteSize();
        }
        byte[] json;
        try {
            json = SafetensorsFile.JSON.writeValueAsString(root).getBytes(StandardCharsets.UTF_8);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        int padded = (json.length + 7) / 8 * 8;
        byte[] out = Arrays.copyOf(json, padded);
        Arrays.fill(out, json.length, padded, (byte) ' ');
        return out;
    }

    /** The tensor names in file order. */
    public java.util.List<String> names() {
        return java.util.List.copyOf(new LinkedHashMap<>(entries).keySet());
    }

    static void writeFully(WritableByteChannel out, ByteBuffer buf) throws IOException {
        while (buf.hasRemaining()) {
            out.write(buf);
        }
    }
}
