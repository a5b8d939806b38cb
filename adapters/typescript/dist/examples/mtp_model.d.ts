import { type StoredTensor } from "./safetensors.js";
/** A linear `[out, in]`, row-major, used as `x · Wᵀ`. */
export interface Linear {
    w: Float64Array;
    out: number;
    in: number;
}
export declare const NORMS: readonly ["pre_fc_norm_embedding", "pre_fc_norm_hidden", "layers.0.input_layernorm", "layers.0.self_attn.q_norm", "layers.0.self_attn.k_norm", "layers.0.post_attention_layernorm", "norm"];
/** The MLX affine spec of one module path, or null when it is not quantized. */
export declare class Quant {
    private defaults;
    private overrides;
    constructor(q: unknown);
    readonly present: boolean;
    spec(path: string): {
        bits: number;
        group: number;
        mode: unknown;
    } | null;
}
export declare class Config {
    readonly hidden: number;
    readonly heads: number;
    readonly kvHeads: number;
    readonly headDim: number;
    readonly eps: number;
    readonly theta: number;
    readonly rotary: number;
    readonly quant: Quant;
    readonly tie: unknown;
    readonly vocab: unknown;
    readonly experts: number | null;
    readonly topK: number | null;
    readonly moeWidth: number | null;
    readonly sharedWidth: number | null;
    readonly normTopkProb: boolean;
    constructor(cfg: Record<string, unknown>);
}
/** A float tensor's elements widened exactly to float64 (F64, F32, F16, BF16). */
export declare function floats(t: StoredTensor, name: string): Float64Array;
/** w[o, i] = scales[o, i / group] · q[o, i] + biases[o, i / group]; codes of `bits` bits form a little-endian bit
 * stream per row of little-endian uint32 words. */
export declare function dequantize(path: string, weight: StoredTensor, scales: StoredTensor, biases: StoredTensor | undefined, quant: Quant): Linear;
export interface MoeWeights {
    layout: string;
    router: Linear;
    sharedGate: Linear;
    sharedUp: Linear;
    sharedDown: Linear;
    sharedGateW: Linear;
    gate: Linear[];
    up: Linear[];
    down: Linear[];
}
export interface Weights {
    norms: Record<string, Float64Array>;
    linears: Record<string, Linear>;
    moe: MoeWeights | null;
    embed: Linear;
    head: Linear;
}
/** Reads a model directory in the raw Hugging Face layout or the companion layout (decided by config.json's
 * model_type, as the runner's loader does). */
export declare function loadModel(directory: unknown): {
    cfg: Config;
    weights: Weights;
};
