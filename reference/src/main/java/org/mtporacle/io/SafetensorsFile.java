package org.mtporacle.io;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;

/**
 * One safetensors file, memory-mapped read-only: an 8-byte little-endian header length {@code n}, {@code n} bytes of
 * UTF-8 JSON (tensor name → {@code dtype}, {@code shape}, {@code data_offsets} relative to the data section, plus an
 * optional {@code __metadata__} string map), then the data section. Tensors are zero-copy views of the mapping.
 *
 * <p>Every header field is validated before use; a malformed file fails with MALFORMED_FILE naming the file and the
 * tensor, and no input makes the reader allocate more than the file's size. Gaps between tensors are tolerated.
 */
public final class SafetensorsFile implements TensorStore {
    /** The largest header accepted, as in the reference safetensors implementation. */
    public static final long MAX_HEADER_BYTES = 100L * 1024 * 1024;

    /** Where one tensor lives: offsets are relative to the data section, {@code [begin, end)}. */
    public record TensorInfo(String name, DType dtype, int[] shape, long begin, long end) {
        public TensorInfo {
            shape = shape.clone();
        }

        @Override
        public int[] shape() {
            return shape.clone();
        }

        public long byteSize() {
            return end - begin;
        }
    }

    /** For writing headers and reports; every read of untrusted JSON goes through {@link StrictJson}. */
    static final ObjectMapper JSON = new ObjectMapper();

    private final Path path;
    private final Arena arena; // null when the mapping is managed by the garbage collector
    private final MemorySegment data;
    private final Map<String, TensorInfo> tensors;
    private final Map<String, String> metadata;
    private final long headerBytes;

    private SafetensorsFile(Path path, Arena arena, MemorySegment data, Map<String, TensorInfo> tensors,
                            Map<String, String> metadata, long headerBytes) {
        this.path = path;
        this.arena = arena;
        this.data = data;
        this.tensors = tensors;
        this.metadata = metadata;
        this.headerBytes = headerBytes;
    }

    /**
     * Maps and validates {@code path}.
     *
     * @throws MtpException MALFORMED_FILE when the file cannot be read or is malformed
     */
    public static SafetensorsFile open(Path path) {
        return open(path, false);
    }

    /**
     * Maps and validates {@code path}; when {@code gcManaged} the mapping is released by the garbage collector once no
     * view is reachable (for models whose weights outlive the reader) and {@link #close()} does nothing.
     */
    public static SafetensorsFile open(Path path, boolean gcManaged) {
        Arena arena = gcManaged ? Arena.ofAuto() : Arena.ofShared();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < 8) {
                throw malformed(path, "file has " + size + " bytes, expected at least 8 for the header length");
            }
            ByteBuffer lenBuf = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            while (lenBuf.hasRemaining() && ch.read(lenBuf, lenBuf.position()) >= 0) {
                // read until the 8 bytes are in
            }
            long n = lenBuf.getLong(0);
            if (n < 0 || n > size - 8 || n > MAX_HEADER_BYTES) {
                throw malformed(path, "header length " + Long.toUnsignedString(n) + " exceeds file size " + size
                        + " − 8 or the limit " + MAX_HEADER_BYTES);
            }
            MemorySegment all = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            byte[] header = all.asSlice(8, n).toArray(ValueLayout.JAVA_BYTE);
            MemorySegment dataSection = all.asSlice(8 + n);
            Map<String, String> metadata = new TreeMap<>();
            Map<String, TensorInfo> tensors = parseHeader(path, header, dataSection.byteSize(), metadata);
            return new SafetensorsFile(path, gcManaged ? null : arena, dataSection, tensors,
                    Collections.unmodifiableMap(metadata), n);
        } catch (IOException e) {
            closeArena(arena, gcManaged);
            throw new MtpException(MtpException.Kind.MALFORMED_FILE, "safetensors " + path + ": cannot read: " + e, e);
        } catch (RuntimeException e) {
            closeArena(arena, gcManaged);
            throw e;
        }
    }

    private static void closeArena(Arena arena, boolean gcManaged) {
        if (!gcManaged) {
            arena.close();
        }
    }

    private static Map<String, TensorInfo> parseHeader(Path path, byte[] header, long dataSize,
                                                       Map<String, String> metadata) {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(header)).toString();
        } catch (CharacterCodingException e) {
            throw malformed(path, "header is not valid UTF-8 (" + e.getMessage() + ")");
        }
        JsonNode root = StrictJson.parse(text.getBytes(StandardCharsets.UTF_8), "safetensors "
                + UntrustedText.path(path) + ": header");
        Map<String, TensorInfo> tensors = new TreeMap<>();
        for (Map.Entry<String, JsonNode> e : root.properties()) {
            String name = e.getKey();
            if (name.equals("__metadata__")) {
                readMetadata(path, e.getValue(), metadata);
            } else {
                tensors.put(name, readEntry(path, name, e.getValue(), dataSize));
            }
        }
        checkOverlaps(path, tensors);
        return tensors;
    }

    private static void readMetadata(Path path, JsonNode node, Map<String, String> metadata) {
        if (node.isNull()) {
            return;
        }
        if (!node.isObject()) {
            throw malformed(path, "__metadata__ is a " + node.getNodeType() + ", expected an object of strings");
        }
        for (Map.Entry<String, JsonNode> m : node.properties()) {
            if (!m.getValue().isTextual()) {
                throw malformed(path, "__metadata__ value of '" + m.getKey() + "' is a " + m.getValue().getNodeType()
                        + ", expected a string");
            }
            metadata.put(m.getKey(), m.getValue().textValue());
        }
    }

    private static TensorInfo readEntry(Path path, String name, JsonNode node, long dataSize) {
        String where = "tensor '" + name + "'";
        if (!node.isObject()) {
            throw malformed(path, where + " entry is a " + node.getNodeType() + ", expected an object");
        }
        JsonNode dt = node.get("dtype");
        DType dtype = dt != null && dt.isTextual() ? DType.fromSafetensorsName(dt.textValue()) : null;
        if (dtype == null) {
            throw malformed(path, where + " has unknown dtype " + dt + ", expected one of "
                    + Arrays.stream(DType.values()).map(DType::safetensorsName).toList());
        }
        JsonNode sh = node.get("shape");
        if (sh == null || !sh.isArray()) {
            throw malformed(path, where + " has shape " + sh + ", expected an array of non-negative integers");
        }
        int[] shape = new int[sh.size()];
        for (int i = 0; i < shape.length; i++) {
            JsonNode d = sh.get(i);
            if (!d.isIntegralNumber() || !d.canConvertToInt() || d.intValue() < 0) {
                throw malformed(path, where + " has shape " + sh + " with dim " + d
                        + ", expected non-negative integers below 2^31");
            }
            shape[i] = d.intValue();
        }
        JsonNode off = node.get("data_offsets");
        if (off == null || !off.isArray() || off.size() != 2 || !isOffset(off.get(0)) || !isOffset(off.get(1))) {
            throw malformed(path, where + " has data_offsets " + off + ", expected [begin, end] of non-negative "
                    + "integers");
        }
        long begin = off.get(0).longValue();
        long end = off.get(1).longValue();
        if (begin > end) {
            throw malformed(path, where + " has data_offsets [" + begin + ", " + end + "] with begin > end");
        }
        if (end > dataSize) {
            throw malformed(path, where + " has data_offsets [" + begin + ", " + end + "] outside the data section of "
                    + dataSize + " bytes");
        }
        long expected;
        try {
            long elements = 1;
            for (int d : shape) {
                elements = Math.multiplyExact(elements, d);
            }
            expected = Math.multiplyExact(elements, dtype.byteSize());
        } catch (ArithmeticException ex) {
            throw malformed(path, where + " has shape " + Arrays.toString(shape) + " whose byte size overflows");
        }
        if (expected != end - begin) {
            throw malformed(path, where + " spans " + (end - begin) + " bytes, expected " + expected + " for "
                    + dtype.safetensorsName() + " " + Arrays.toString(shape));
        }
        return new TensorInfo(name, dtype, shape, begin, end);
    }

    private static boolean isOffset(JsonNode n) {
        return n != null && n.isIntegralNumber() && n.canConvertToLong() && n.longValue() >= 0;
    }

    private static void checkOverlaps(Path path, Map<String, TensorInfo> tensors) {
        List<TensorInfo> byOffset = new ArrayList<>(tensors.values());
        byOffset.sort(Comparator.comparingLong(TensorInfo::begin).thenComparingLong(TensorInfo::end));
        TensorInfo prev = null;
        for (TensorInfo t : byOffset) {
            if (prev != null && t.begin() < prev.end() && t.begin() < t.end()) {
                throw malformed(path, "tensor '" + t.name() + "' [" + t.begin() + ", " + t.end()
                        + ") overlaps tensor '" + prev.name() + "' [" + prev.begin() + ", " + prev.end() + ")");
            }
            if (prev == null || t.end() > prev.end()) {
                prev = t;
            }
        }
    }

    private static MtpException malformed(Path path, String what) {
        return MtpException.malformedFile("safetensors " + UntrustedText.path(path) + ": " + what);
    }

    public Path path() {
        return path;
    }

    /** The {@code __metadata__} map (empty when absent). */
    public Map<String, String> metadata() {
        return metadata;
    }

    /** The header's JSON length {@code n}; the data section starts at byte {@code 8 + n}. */
    public long headerBytes() {
        return headerBytes;
    }

    /** The size of the data section in bytes. */
    public long dataBytes() {
        return data.byteSize();
    }

    /** Where {@code name} lives, or null when there is no such tensor. */
    public TensorInfo info(String name) {
        return tensors.get(name);
    }

    /** Every tensor's info, sorted by name. */
    public Map<String, TensorInfo> infos() {
        return Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
    }

    @Override
    public List<String> names() {
        return List.copyOf(tensors.keySet());
    }

    @Override
    public boolean contains(String name) {
        return tensors.containsKey(name);
    }

    @Override
    public HostTensor tensor(String name) {
        TensorInfo t = tensors.get(name);
        if (t == null) {
            throw MtpException.invalidArgument("safetensors " + path + ": no tensor '" + name + "'");
        }
        return HostTensor.view(t.dtype(), t.shape, data.asSlice(t.begin(), t.byteSize()));
    }

    @Override
    public Path fileOf(String name) {
        return path;
    }

    @Override
    public List<Path> files() {
        return List.of(path);
    }

    @Override
    public void close() {
        if (arena != null && arena.scope().isAlive()) {
            arena.close();
        }
    }
}
