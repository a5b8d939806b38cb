package org.mtporacle.api;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;

/**
 * A host tensor: dtype, shape and little-endian row-major data. The exchange type at the contract boundary (tokens,
 * contexts, checkpoint tensors) and the view type of tensors mapped from safetensors files (zero-copy).
 *
 * <p>A {@code HostTensor} is immutable: factories copy caller arrays, and {@link #data()} is a read-only segment.
 * Element accessors convert on the fly (BF16 and F16 widen exactly to f32).
 */
public final class HostTensor {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final DType dtype;
    private final int[] shape;
    private final long elementCount;
    private final MemorySegment data;

    private HostTensor(DType dtype, int[] shape, MemorySegment data) {
        this.dtype = dtype;
        this.shape = shape;
        this.elementCount = elementCount(shape);
        this.data = data.asReadOnly();
    }

    /**
     * Wraps {@code data} without copying (the caller keeps it alive and unchanged, as for a mapped file).
     *
     * @throws MtpException INVALID_ARGUMENT when the byte size is not {@code product(shape) × dtype size}
     */
    public static HostTensor view(DType dtype, int[] shape, MemorySegment data) {
        Objects.requireNonNull(dtype, "dtype");
        int[] s = checkShape(shape);
        long expected = Math.multiplyExact(elementCount(s), dtype.byteSize());
        if (data.byteSize() != expected) {
            throw MtpException.invalidArgument("tensor: data has " + data.byteSize() + " bytes, expected " + expected
                    + " for " + dtype + " " + Arrays.toString(s));
        }
        return new HostTensor(dtype, s, data);
    }

    /** A copy of {@code data} as a tensor owned by the Java heap. */
    public static HostTensor copyOf(DType dtype, int[] shape, MemorySegment data) {
        HostTensor v = view(dtype, shape, data);
        byte[] bytes = data.toArray(ValueLayout.JAVA_BYTE);
        return new HostTensor(dtype, v.shape, MemorySegment.ofArray(bytes));
    }

    /** An F32 tensor holding a copy of {@code values}. */
    public static HostTensor ofFloats(float[] values, int... shape) {
        int[] s = checkShape(shape);
        checkCount(values.length, s);
        MemorySegment seg = MemorySegment.ofArray(new byte[values.length * 4]);
        MemorySegment.copy(values, 0, seg, F32, 0, values.length); // one bulk copy: a verify's logits are 1M floats
        return new HostTensor(DType.F32, s, seg);
    }

    /** An F64 tensor holding a copy of {@code values}. */
    public static HostTensor ofDoubles(double[] values, int... shape) {
        int[] s = checkShape(shape);
        checkCount(values.length, s);
        MemorySegment seg = MemorySegment.ofArray(new byte[values.length * 8]);
        for (int i = 0; i < values.length; i++) {
            seg.setAtIndex(F64, i, values[i]);
        }
        return new HostTensor(DType.F64, s, seg);
    }

    /** An I32 tensor holding a copy of {@code values}. */
    public static HostTensor ofInts(int[] values, int... shape) {
        int[] s = checkShape(shape);
        checkCount(values.length, s);
        MemorySegment seg = MemorySegment.ofArray(new byte[values.length * 4]);
        for (int i = 0; i < values.length; i++) {
            seg.setAtIndex(I32, i, values[i]);
        }
        return new HostTensor(DType.I32, s, seg);
    }

    /** An I32 tensor {@code [rows, cols]} from a rectangular int matrix. */
    public static HostTensor ofIntRows(int[][] rows) {
        int cols = rows.length == 0 ? 0 : rows[0].length;
        int[] flat = new int[rows.length * cols];
        for (int r = 0; r < rows.length; r++) {
            if (rows[r].length != cols) {
                throw MtpException.invalidArgument("tensor: row " + r + " has " + rows[r].length
                        + " values, expected " + cols + " (rows must be rectangular)");
            }
            System.arraycopy(rows[r], 0, flat, r * cols, cols);
        }
        return ofInts(flat, rows.length, cols);
    }

    /** A tensor of {@code dtype} holding {@code values} rounded as {@link #convert} does. */
    public static HostTensor ofFloats(DType dtype, float[] values, int... shape) {
        return ofFloats(values, shape).convert(dtype);
    }

    public DType dtype() {
        return dtype;
    }

    /** A copy of the shape. */
    public int[] shape() {
        return shape.clone();
    }

    public int rank() {
        return shape.length;
    }

    public int dim(int axis) {
        return shape[axis];
    }

    public long elementCount() {
        return elementCount;
    }

    /** The read-only little-endian data. */
    public MemorySegment data() {
        return data;
    }

    public long byteSize() {
        return data.byteSize();
    }

    /** Element {@code index} (row-major) widened to f32; integer types convert by value. */
    public float getFloat(long index) {
        return switch (dtype) {
            case F32 -> data.getAtIndex(F32, index);
            case F64 -> (float) data.getAtIndex(F64, index);
            case BF16 -> FloatFormats.bf16ToF32(data.getAtIndex(I16, index));
            case F16 -> Float.float16ToFloat(data.getAtIndex(I16, index));
            default -> (float) getLong(index);
        };
    }

    /** Element {@code index} widened to f64 (exact for every floating dtype). */
    public double getDouble(long index) {
        return dtype == DType.F64 ? data.getAtIndex(F64, index) : dtype.isFloating() ? getFloat(index) : getLong(index);
    }

    /** Element {@code index} of an integer or BOOL tensor as a long (U32 is zero-extended). */
    public long getLong(long index) {
        return switch (dtype) {
            case I64 -> data.getAtIndex(I64, index);
            case I32 -> data.getAtIndex(I32, index);
            case U32 -> Integer.toUnsignedLong(data.getAtIndex(I32, index));
            case I16 -> data.getAtIndex(I16, index);
            case U16 -> Short.toUnsignedInt(data.getAtIndex(I16, index));
            case I8 -> data.get(ValueLayout.JAVA_BYTE, index);
            case U8, BOOL -> Byte.toUnsignedInt(data.get(ValueLayout.JAVA_BYTE, index));
            case F32, F64, F16, BF16 -> (long) getDouble(index);
        };
    }

    /** All elements widened to f32 in row-major order. */
    public float[] toFloatArray() {
        float[] out = new float[Math.toIntExact(elementCount)];
        if (dtype == DType.F32) {
            MemorySegment.copy(data, F32, 0, out, 0, out.length);
            return out;
        }
        for (int i = 0; i < out.length; i++) {
            out[i] = getFloat(i);
        }
        return out;
    }

    /** All elements widened to f64 in row-major order. */
    public double[] toDoubleArray() {
        double[] out = new double[Math.toIntExact(elementCount)];
        for (int i = 0; i < out.length; i++) {
            out[i] = getDouble(i);
        }
        return out;
    }

    /** All elements of an integer tensor as ints; fails when a value does not fit. */
    public int[] toIntArray() {
        int[] out = new int[Math.toIntExact(elementCount)];
        for (int i = 0; i < out.length; i++) {
            long v = getLong(i);
            if (v != (int) v) {
                throw MtpException.invalidArgument("tensor: element " + i + " = " + v + " does not fit in int");
            }
            out[i] = (int) v;
        }
        return out;
    }

    /**
     * This tensor's values as {@code target} (round-to-nearest-even for narrowing float conversions; floating
     * targets only, or the same dtype).
     */
    public HostTensor convert(DType target) {
        if (target == dtype) {
            return this;
        }
        if (!target.isFloating()) {
            throw MtpException.invalidArgument("tensor: cannot convert " + dtype + " to " + target);
        }
        int n = Math.toIntExact(elementCount);
        MemorySegment seg = MemorySegment.ofArray(new byte[Math.multiplyExact(n, target.byteSize())]);
        for (int i = 0; i < n; i++) {
            switch (target) {
                case F64 -> seg.setAtIndex(F64, i, getDouble(i));
                case F32 -> seg.setAtIndex(F32, i, getFloat(i));
                case BF16 -> seg.setAtIndex(I16, i, FloatFormats.f32ToBf16(getFloat(i)));
                case F16 -> seg.setAtIndex(I16, i, Float.floatToFloat16(getFloat(i)));
                default -> throw new IllegalStateException();
            }
        }
        return new HostTensor(target, shape.clone(), seg);
    }

    /** A heap copy (detached from any mapped file). */
    public HostTensor copy() {
        return new HostTensor(dtype, shape.clone(), MemorySegment.ofArray(data.toArray(ValueLayout.JAVA_BYTE)));
    }

    /**
     * The sub-tensor {@code [from, to)} along axis 0, sharing data (rank and trailing dims are kept).
     *
     * @throws MtpException INVALID_ARGUMENT when the range is outside {@code [0, dim(0)]}
     */
    public HostTensor slice0(int from, int to) {
        if (shape.length == 0 || from < 0 || to < from || to > shape[0]) {
            throw MtpException.invalidArgument("tensor: slice [" + from + ", " + to + ") outside axis 0 of "
                    + Arrays.toString(shape));
        }
        long rowBytes = shape[0] == 0 ? 0 : data.byteSize() / shape[0];
        int[] s = shape.clone();
        s[0] = to - from;
        return new HostTensor(dtype, s, data.asSlice(from * rowBytes, (to - from) * rowBytes));
    }

    /** A tensor with the same data and another shape of the same element count. */
    public HostTensor reshape(int... newShape) {
        int[] s = checkShape(newShape);
        if (elementCount(s) != elementCount) {
            throw MtpException.invalidArgument("tensor: cannot reshape " + Arrays.toString(shape) + " to "
                    + Arrays.toString(s));
        }
        return new HostTensor(dtype, s, data);
    }

    /** True when dtype, shape and every byte are equal. */
    public boolean contentEquals(HostTensor other) {
        return other != null && dtype == other.dtype && Arrays.equals(shape, other.shape)
                && data.mismatch(other.data) == -1;
    }

    /** Copies the data into a segment allocated from {@code arena}. */
    public MemorySegment copyTo(Arena arena) {
        MemorySegment out = arena.allocate(Math.max(1, data.byteSize()), 16).asSlice(0, data.byteSize());
        out.copyFrom(data);
        return out;
    }

    /** {@code "BF16[1, 2, 16]"}. */
    public String describe() {
        return dtype + Arrays.toString(shape);
    }

    @Override
    public String toString() {
        return "HostTensor" + describe();
    }

    private static int[] checkShape(int[] shape) {
        Objects.requireNonNull(shape, "shape");
        for (int i = 0; i < shape.length; i++) {
            if (shape[i] < 0) {
                throw MtpException.invalidArgument("tensor: shape " + Arrays.toString(shape) + " has a negative dim "
                        + shape[i] + " at axis " + i);
            }
        }
        return shape.clone();
    }

    private static long elementCount(int[] shape) {
        long n = 1;
        for (int d : shape) {
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    private static void checkCount(int count, int[] shape) {
        if (count != elementCount(shape)) {
            throw MtpException.invalidArgument("tensor: " + count + " values do not fill shape "
                    + Arrays.toString(shape));
        }
    }
}
