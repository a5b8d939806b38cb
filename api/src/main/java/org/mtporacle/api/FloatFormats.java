package org.mtporacle.api;

/** Bit-level conversions between f32 and bfloat16 (f16 uses {@link Float#float16ToFloat}). */
public final class FloatFormats {
    private FloatFormats() {
    }

    /** Widens bfloat16 bits to f32 exactly: the bf16 bits are the high half of the f32 bits. */
    public static float bf16ToF32(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** Rounds f32 to bfloat16 bits, round-to-nearest-even; NaN stays a quiet NaN. */
    public static short f32ToBf16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if (Float.isNaN(value)) {
            return (short) ((bits >>> 16) | 0x0040);
        }
        int rounding = 0x7FFF + ((bits >>> 16) & 1);
        return (short) ((bits + rounding) >>> 16);
    }

    /** Rounds f32 through bfloat16 and back. */
    public static float roundToBf16(float value) {
        return bf16ToF32(f32ToBf16(value));
    }
}
