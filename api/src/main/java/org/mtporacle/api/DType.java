package org.mtporacle.api;

/** Element types of tensors at the contract boundary and in safetensors files, with their byte sizes. */
public enum DType {
    F64("F64", 8), F32("F32", 4), F16("F16", 2), BF16("BF16", 2),
    I64("I64", 8), I32("I32", 4), I16("I16", 2), I8("I8", 1),
    U32("U32", 4), U16("U16", 2), U8("U8", 1), BOOL("BOOL", 1);

    private final String safetensorsName;
    private final int byteSize;

    DType(String safetensorsName, int byteSize) {
        this.safetensorsName = safetensorsName;
        this.byteSize = byteSize;
    }

    /** The dtype string used in safetensors headers ({@code "BF16"}, {@code "F32"}, ...). */
    public String safetensorsName() {
        return safetensorsName;
    }

    public int byteSize() {
        return byteSize;
    }

    /** True for F64, F32, F16 and BF16. */
    public boolean isFloating() {
        return this == F64 || this == F32 || this == F16 || this == BF16;
    }

    /** True for the signed and unsigned integer types (not BOOL). */
    public boolean isInteger() {
        return !isFloating() && this != BOOL;
    }

    /** The dtype whose safetensors name is {@code name}, or null when there is none. */
    public static DType fromSafetensorsName(String name) {
        for (DType t : values()) {
            if (t.safetensorsName.equals(name)) {
                return t;
            }
        }
        return null;
    }
}
