package org.mtporacle.wire;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.mtporacle.api.DType;
import org.mtporacle.api.HostTensor;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * One frame of {@code mtp-oracle-wire/1} (WIRE.md §2): a JSON header on one line, then the raw little-endian bytes of
 * every tensor its {@code tensors} list describes, in order, without padding.
 *
 * @param header  the header object
 * @param tensors the payload's tensors, index {@code i} referenced in the header as {@code {"tensor": i}}
 */
public record WireFrame(ObjectNode header, List<HostTensor> tensors) {
    /** The protocol version this code speaks. */
    public static final String PROTOCOL = "mtp-oracle-wire/1";

    /** The longest header line accepted (WIRE.md §2). */
    public static final int MAX_HEADER_BYTES = 16 << 20;
    /** The most payload bytes one tensor of a frame may carry (WIRE.md §2), checked before it is read. */
    public static final long MAX_TENSOR_BYTES = 1L << 30;
    /** The most payload bytes all tensors of one frame may carry together (WIRE.md §2), checked before any is read. */
    public static final long MAX_FRAME_PAYLOAD_BYTES = 1L << 30;

    static final ObjectMapper JSON = new ObjectMapper()
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private static final int CHUNK = 1 << 16;

    /** Writes a header into the stream without closing or flushing it ({@link #write} flushes once, at the end). */
    private static final ObjectWriter HEADER_WRITER = JSON.writer()
            .without(JsonGenerator.Feature.AUTO_CLOSE_TARGET).without(JsonGenerator.Feature.FLUSH_PASSED_TO_STREAM);

    public WireFrame {
        tensors = List.copyOf(tensors);
    }

    /** A frame that is not well-formed: the stream cannot be trusted after it. */
    public static final class FramingException extends IOException {
        private static final long serialVersionUID = 1L;

        public FramingException(String message) {
            super(message);
        }
    }

    /**
     * Reads one frame, or returns null at a clean end of stream (before the first header byte).
     *
     * @throws FramingException when the bytes are not a frame (not JSON, no object, bad tensor list, short payload)
     */
    public static WireFrame read(InputStream in) throws IOException {
        byte[] line = readLine(in);
        if (line == null) {
            return null;
        }
        JsonNode node;
        try {
            node = JSON.readTree(line);
        } catch (JsonProcessingException e) {
            throw new FramingException("not a frame header (one JSON object per line expected): " + preview(line)
                    + " (" + e.getOriginalMessage() + ")");
        }
        if (!(node instanceof ObjectNode header)) {
            throw new FramingException("not a frame header (a JSON object expected): " + preview(line));
        }
        List<HostTensor> tensors = new ArrayList<>();
        JsonNode list = header.get("tensors");
        if (list != null && !list.isNull()) {
            if (!list.isArray()) {
                throw new FramingException("header field tensors is " + list.getNodeType() + ", expected an array");
            }
            List<Descriptor> described = new ArrayList<>();
            long total = 0;
            for (int i = 0; i < list.size(); i++) {
                Descriptor d = describe(list.get(i), i);
                total += d.nbytes(); // each at most 2^30, at most 2^24 of them (the header bound): no overflow
                if (total > MAX_FRAME_PAYLOAD_BYTES) {
                    throw new FramingException("the frame's tensors[0.." + i + "] carry " + total + " bytes, past "
                            + "the bound of " + MAX_FRAME_PAYLOAD_BYTES + " bytes a frame may carry (WIRE.md §2)");
                }
                described.add(d);
            }
            for (Descriptor d : described) {
                tensors.add(readPayload(in, d));
            }
        }
        return new WireFrame(header, tensors);
    }

    /** Writes {@code header} (with its {@code tensors} list set from {@code tensors}) and the payload; flushes. */
    public static void write(OutputStream out, ObjectNode header, List<HostTensor> tensors) throws IOException {
        if (!tensors.isEmpty()) {
            ArrayNode list = header.putArray("tensors");
            for (HostTensor t : tensors) {
                ObjectNode d = list.addObject();
                d.put("dtype", t.dtype().safetensorsName());
                ArrayNode shape = d.putArray("shape");
                for (int s : t.shape()) {
                    shape.add(s);
                }
                d.put("nbytes", t.byteSize());
            }
        }
        // The header goes straight to the stream (callers buffer it), the payload through one buffer no larger than
        // the payload: a reply without tensors allocates no copy buffer at all (a 64 KiB buffer per frame made a
        // stream of tiny requests allocate 64 KiB each in serve-wire; SECURITY.md, the campaign).
        HEADER_WRITER.writeValue(out, header);
        out.write('\n');
        long payload = 0;
        for (HostTensor t : tensors) {
            payload += t.data().byteSize();
        }
        if (payload > 0) {
            byte[] buf = new byte[(int) Math.min(CHUNK, payload)];
            for (HostTensor t : tensors) {
                MemorySegment data = t.data();
                long size = data.byteSize();
                for (long off = 0; off < size; ) {
                    int len = (int) Math.min(buf.length, size - off);
                    MemorySegment.copy(data, ValueLayout.JAVA_BYTE, off, buf, 0, len);
                    out.write(buf, 0, len);
                    off += len;
                }
            }
        }
        out.flush();
    }

    /** The tensor a header value {@code {"tensor": i}} refers to; null for JSON null or absent. */
    public HostTensor tensorAt(JsonNode ref, String field) throws FramingException {
        if (ref == null || ref.isNull()) {
            return null;
        }
        JsonNode i = ref.get("tensor");
        if (!ref.isObject() || i == null || !i.canConvertToInt() || i.asInt() < 0 || i.asInt() >= tensors.size()) {
            throw new FramingException(field + " = " + ref + " is not a reference {\"tensor\": i} to one of the "
                    + tensors.size() + " tensors of the frame");
        }
        return tensors.get(i.asInt());
    }

    private record Descriptor(String where, DType dtype, int[] shape, long nbytes) {
    }

    private static Descriptor describe(JsonNode d, int index) throws FramingException {
        String where = "tensors[" + index + "]";
        JsonNode dt = d.get("dtype");
        DType dtype = dt == null || !dt.isTextual() ? null : DType.fromSafetensorsName(dt.asText());
        if (dtype == null) {
            throw new FramingException(where + ".dtype = " + clip(dt) + ", expected one of F64 F32 F16 BF16 I64 I32 "
                    + "I16 I8 U32 U16 U8 BOOL");
        }
        JsonNode sh = d.get("shape");
        if (sh == null || !sh.isArray() || sh.size() > 16) {
            throw new FramingException(where + ".shape = " + clip(sh) + ", expected an array of at most 16 dims");
        }
        int[] shape = new int[sh.size()];
        long count = 1;
        for (int i = 0; i < shape.length; i++) {
            JsonNode v = sh.get(i);
            if (!v.canConvertToInt() || !v.isIntegralNumber() || v.asInt() < 0) {
                throw new FramingException(where + ".shape[" + i + "] = " + clip(v) + ", expected an int ≥ 0");
            }
            shape[i] = v.asInt();
            count = Math.multiplyHigh(count, shape[i]) != 0 ? -1 : count * shape[i];
            if (count < 0 || count > Integer.MAX_VALUE) {
                throw new FramingException(where + ".shape " + clip(sh) + " has more than 2^31 elements");
            }
        }
        long expected = count * dtype.byteSize();
        JsonNode nb = d.get("nbytes");
        if (nb == null || !nb.isIntegralNumber() || !nb.canConvertToLong() || nb.asLong() != expected) {
            throw new FramingException(where + ".nbytes = " + clip(nb) + ", expected " + expected + " for " + dtype
                    + " " + clip(sh));
        }
        if (expected > MAX_TENSOR_BYTES) {
            throw new FramingException(where + " carries " + expected + " bytes, past the bound of "
                    + MAX_TENSOR_BYTES + " bytes a tensor may carry (WIRE.md §2)");
        }
        return new Descriptor(where, dtype, shape, expected);
    }

    /** Bytes read before a tensor's buffer grows straight to its checked size. */
    private static final int GROW_LIMIT = 64 << 20;

    /**
     * Reads one tensor's payload. The buffer grows (doubling from 1 MiB) with the bytes that actually arrive, and
     * only after {@value #GROW_LIMIT} bytes arrived is it allocated at the claimed size: a header that claims 1 GiB
     * and sends nothing allocates 1 MiB, and what is allocated stays within 16 × the bytes received + 64 MiB.
     */
    private static HostTensor readPayload(InputStream in, Descriptor d) throws IOException {
        int n = (int) d.nbytes();
        byte[] buf = allocate(d, Math.min(n, 1 << 20));
        int got = 0;
        while (true) {
            int r = in.readNBytes(buf, got, buf.length - got);
            got += r;
            if (got == n) {
                break;
            }
            if (got < buf.length) {
                throw new FramingException(d.where() + ": the stream ended after " + got + " of " + n
                        + " payload bytes");
            }
            int next = got >= GROW_LIMIT ? n : (int) Math.min(n, 2L * buf.length);
            byte[] grown = allocate(d, next);
            System.arraycopy(buf, 0, grown, 0, got);
            buf = grown;
        }
        return HostTensor.view(d.dtype(), d.shape(), MemorySegment.ofArray(buf));
    }

    private static byte[] allocate(Descriptor d, int size) throws FramingException {
        try {
            return new byte[size];
        } catch (OutOfMemoryError e) {
            // the one allocation an engine's claim drives, within the bound of WIRE.md §2 but not within this heap
            throw new FramingException(d.where() + ": no heap for " + size + " of its " + d.nbytes() + " bytes "
                    + "(within the bound of WIRE.md §2, not within -Xmx here)");
        }
    }

    /** A header value for a message: escaped and cut ({@link org.mtporacle.api.UntrustedText#clip}). */
    private static String clip(JsonNode v) {
        return org.mtporacle.api.UntrustedText.clip(String.valueOf(v));
    }

    private static byte[] readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream(256);
        int b = in.read();
        if (b < 0) {
            return null;
        }
        while (b != '\n') {
            if (b < 0) {
                throw new EOFException("the stream ended inside a header: " + preview(line.toByteArray()));
            }
            if (line.size() >= MAX_HEADER_BYTES) {
                throw new FramingException("a header line is longer than " + MAX_HEADER_BYTES + " bytes");
            }
            line.write(b);
            b = in.read();
        }
        return line.toByteArray();
    }

    /** The first bytes of {@code bytes} as printable text, for messages. */
    static String preview(byte[] bytes) {
        String s = new String(bytes, 0, Math.min(bytes.length, 120), StandardCharsets.UTF_8);
        StringBuilder b = new StringBuilder("'");
        s.codePoints().forEach(c -> {
            if (c >= 0x20 && c != 0x7f && c != '\\' && c != '\'' && c != 0xfffd) {
                b.appendCodePoint(c);
            } else {
                b.append(String.format("\\x%02x", c & 0xff));
            }
        });
        return b.append(bytes.length > 120 ? "…'" : "'").toString();
    }
}
