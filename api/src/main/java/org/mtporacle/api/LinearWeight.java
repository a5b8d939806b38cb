package org.mtporacle.api;

/**
 * A linear layer's weight, logical shape {@code [out, in]}, used as {@code x · Wᵀ} (spec §1.2), or an embedding table
 * {@code [V, H]} gathered row-wise (spec §1.7). Dense weights are F32, F16 or BF16; quantized weights use MLX's affine
 * format (spec §2).
 */
public sealed interface LinearWeight {
    int outFeatures();

    int inFeatures();

    /** Bytes a full pass over the weight reads (codes, scales and biases for affine weights). */
    long byteSize();

    /** A dense weight {@code [out, in]} of F32, F16 or BF16. */
    record Dense(HostTensor weight) implements LinearWeight {
        public Dense {
            if (weight.rank() != 2 || !(weight.dtype() == DType.F32 || weight.dtype() == DType.F16
                    || weight.dtype() == DType.BF16)) {
                throw MtpException.incompatibleModel("linear: dense weight must be a 2-D F32/F16/BF16 tensor, got "
                        + weight.describe());
            }
        }

        @Override
        public int outFeatures() {
            return weight.dim(0);
        }

        @Override
        public int inFeatures() {
            return weight.dim(1);
        }

        @Override
        public long byteSize() {
            return weight.byteSize();
        }
    }

    /**
     * An MLX affine-quantized weight (spec §2): {@code codes} U32 {@code [out, in·bits/32]} holding little-endian bit
     * streams per row, {@code scales} and {@code biases} {@code [out, in/groupSize]} in a float dtype; dequantized
     * {@code w[o,i] = scales[o, i/g] · q[o,i] + biases[o, i/g]}. {@code biases} may be null (treated as zero).
     */
    record Affine(HostTensor codes, HostTensor scales, HostTensor biases, int bits, int groupSize)
            implements LinearWeight {
        public Affine {
            if (bits != 2 && bits != 3 && bits != 4 && bits != 5 && bits != 6 && bits != 8) {
                throw MtpException.incompatibleModel("linear: unsupported quantization bits " + bits
                        + " (expected 2, 3, 4, 5, 6 or 8)");
            }
            if (groupSize != 32 && groupSize != 64 && groupSize != 128) {
                throw MtpException.incompatibleModel("linear: unsupported group size " + groupSize
                        + " (expected 32, 64 or 128)");
            }
            if (codes.dtype() != DType.U32 || codes.rank() != 2 || scales.rank() != 2 || !scales.dtype().isFloating()) {
                throw MtpException.incompatibleModel("linear: quantized weight needs U32 codes and float scales, got "
                        + codes.describe() + " and " + scales.describe());
            }
            int out = scales.dim(0);
            long in = (long) scales.dim(1) * groupSize;
            if (codes.dim(0) != out || (long) codes.dim(1) * 32 != in * bits) {
                throw MtpException.incompatibleModel("linear: codes " + codes.describe() + " do not match scales "
                        + scales.describe() + " at " + bits + " bits, group " + groupSize);
            }
            if (biases != null && (biases.rank() != 2 || biases.dim(0) != out || biases.dim(1) != scales.dim(1))) {
                throw MtpException.incompatibleModel("linear: biases " + biases.describe() + " do not match scales "
                        + scales.describe());
            }
        }

        @Override
        public int outFeatures() {
            return scales.dim(0);
        }

        @Override
        public int inFeatures() {
            return scales.dim(1) * groupSize;
        }

        @Override
        public long byteSize() {
            return codes.byteSize() + scales.byteSize() + (biases == null ? 0 : biases.byteSize());
        }
    }
}
