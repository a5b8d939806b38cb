import type { RowSampler } from "../src/mtp_wire.js";
/** Threefry-2x32 with 20 rounds on key (k0, k1) and counter (c0, c1). */
export declare function threefry2x32(k0: number, k1: number, c0: number, c1: number): [number, number];
/** (seed XOR ((step + 1) · 0x9E3779B97F4A7C15)) mod 2^64, split into MLX's key (high word, low word). */
export declare function stepKey(seed: bigint, step: bigint): [number, number];
/** MLX's uniform in [0, 1) from one draw of random bits: f32(bits) / 2^32, at most the float below 1. */
export declare function uniform(key: [number, number]): number;
/** MLX's CPU float32 exp (SPEC.md §5): 2^k · p(f) with k = round(x·log2 e); the polynomial's fma is one double
 * multiply-add rounded to f32, exact as numpy's reference does it (p·f is exact in double). */
export declare function mlxExp(x: number): number;
/** The lowest index of the largest value. */
export declare function argmax(x: ArrayLike<number>): number;
/** One draft token from a row's float32 log-probs [V] (spec §7). */
export declare function sampleRow(lp: Float32Array, s: RowSampler, step: bigint): number;
