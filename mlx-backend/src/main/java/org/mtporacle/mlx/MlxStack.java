package org.mtporacle.mlx;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.LinearWeight;
import org.mtporacle.mlx.handle.MlxArray;
import org.mtporacle.mlx.handle.MlxOps;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Linear layers that read the same input (q/k/v, the MLP's gate and up), run as one product when their weights
 * stack: {@code x · [W₁; W₂; …]ᵀ} is {@code [x · W₁ᵀ | x · W₂ᵀ | …]}, each output column the same dot product of
 * the same row and weights. One launch instead of one per layer (spec §1.5 and §1.6 compute them separately; only the
 * order of independent products changes). Weights stack when all are dense of one dtype, or all affine with the same
 * bits, group size, scale dtype and bias presence; otherwise each runs on its own.
 */
final class MlxStack implements AutoCloseable {
    private final List<MlxLinear> linears; // one when stacked, else one per weight
    private final int[] widths;            // each weight's output width, in order

    private MlxStack(List<MlxLinear> linears, int[] widths) {
        this.linears = linears;
        this.widths = widths;
    }

    static MlxStack upload(MlxOps ops, List<LinearWeight> weights, int computeDtype, boolean quantF32) {
        int[] widths = weights.stream().mapToInt(LinearWeight::outFeatures).toArray();
        Optional<LinearWeight> stacked = stackRows(weights);
        List<MlxLinear> made = new ArrayList<>();
        try {
            if (stacked.isPresent()) {
                made.add(MlxLinear.upload(ops, stacked.get(), computeDtype, quantF32));
            } else {
                for (LinearWeight w : weights) {
                    made.add(MlxLinear.upload(ops, w, computeDtype, quantF32));
                }
            }
        } catch (RuntimeException | Error e) {
            made.forEach(MlxLinear::close);
            throw e;
        }
        return new MlxStack(List.copyOf(made), widths);
    }

    /** One product already stacked on the device ({@code widths}: each part's output width, in order); owns it. */
    static MlxStack of(MlxLinear stacked, int... widths) {
        return new MlxStack(List.of(stacked), widths.clone());
    }

    /** Whether the weights went up as one stacked product (for tests). */
    boolean isStacked() {
        return linears.size() == 1 && widths.length > 1;
    }

    /** {@code x · Wᵢᵀ} for every weight, in order, {@code [..., in] → [..., outᵢ]}. */
    List<MlxArray> apply(MlxOps ops, MlxArray x) {
        if (linears.size() == widths.length) {
            List<MlxArray> out = new ArrayList<>(widths.length);
            for (MlxLinear l : linears) {
                out.add(l.apply(ops, x));
            }
            return out;
        }
        MlxArray y = linears.getFirst().apply(ops, x);
        int[] shape = y.shape();
        int last = shape.length - 1;
        List<MlxArray> out = new ArrayList<>(widths.length);
        int at = 0;
        for (int w : widths) {
            int[] start = new int[shape.length];
            int[] stop = shape.clone();
            start[last] = at;
            stop[last] = at + w;
            out.add(ops.slice(y, start, stop));
            at += w;
        }
        return out;
    }

    /** The weights' rows one after another, as one weight, when they stack. */
    static Optional<LinearWeight> stackRows(List<LinearWeight> weights) {
        if (weights.size() < 2) {
            return Optional.empty();
        }
        if (weights.stream().allMatch(w -> w instanceof LinearWeight.Dense)) {
            List<HostTensor> t = weights.stream().map(w -> ((LinearWeight.Dense) w).weight()).toList();
            return sameColumns(t) ? Optional.of(new LinearWeight.Dense(concatRows(t))) : Optional.empty();
        }
        if (!weights.stream().allMatch(w -> w instanceof LinearWeight.Affine)) {
            return Optional.empty();
        }
        List<LinearWeight.Affine> a = weights.stream().map(w -> (LinearWeight.Affine) w).toList();
        LinearWeight.Affine first = a.getFirst();
        for (LinearWeight.Affine x : a) {
            if (x.bits() != first.bits() || x.groupSize() != first.groupSize()
                    || (x.biases() == null) != (first.biases() == null)) {
                return Optional.empty();
            }
        }
        List<HostTensor> codes = a.stream().map(LinearWeight.Affine::codes).toList();
        List<HostTensor> scales = a.stream().map(LinearWeight.Affine::scales).toList();
        List<HostTensor> biases = first.biases() == null ? null : a.stream().map(LinearWeight.Affine::biases).toList();
        if (!sameColumns(codes) || !sameColumns(scales) || (biases != null && !sameColumns(biases))) {
            return Optional.empty();
        }
        return Optional.of(new LinearWeight.Affine(concatRows(codes), concatRows(scales),
                biases == null ? null : concatRows(biases), first.bits(), first.groupSize()));
    }

    private static boolean sameColumns(List<HostTensor> t) {
        HostTensor first = t.getFirst();
        long bytes = t.stream().mapToLong(HostTensor::byteSize).sum();
        return bytes <= Integer.MAX_VALUE - 8 && t.stream().allMatch(x -> x.rank() == 2 && x.dtype() == first.dtype() && x.dim(1) == first.dim(1));
    }

    /** Row-major {@code [Σ rowsᵢ, cols]}: the tensors' bytes one after another. */
    private static HostTensor concatRows(List<HostTensor> t) {
        long bytes = t.stream().mapToLong(HostTensor::byteSize).sum();
        int rows = Math.toIntExact(t.stream().mapToLong(x -> x.dim(0)).sum());
        MemorySegment all = MemorySegment.ofArray(new byte[Math.toIntExact(bytes)]);
        long at = 0;
        for (HostTensor x : t) {
            MemorySegment.copy(x.data(), 0, all, at, x.byteSize());
            at += x.byteSize();
        }
        return HostTensor.view(t.getFirst().dtype(), new int[] {rows, t.getFirst().dim(1)}, all);
    }

    @Override
    public void close() {
        linears.forEach(MlxLinear::close);
    }
}
