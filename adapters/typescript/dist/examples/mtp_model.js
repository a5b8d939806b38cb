// A model directory as the MTP block reads it (spec §1.2, §1.3, §1.6, §2, §11.4, §11.5, §12.1, §12.2): config.json,
// safetensors shards, the raw Hugging Face layout (`mtp.` prefix, zero-centred norms) or the companion layout (full
// gains, the target's embedding and head beside it), MLX affine quantization, and a MoE layer's router, experts
// (per-expert, HF fused or MLX stacked) and shared expert. Every weight ends as float64 with full norm gains.
import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync } from "node:fs";
import { MtpError, Tensor } from "../src/mtp_wire.js";
import { readSafetensors, malformed } from "./safetensors.js";
const incompatible = (m) => new MtpError("INCOMPATIBLE_MODEL", m);
/** A value from a file, for a one-line message: JSON-escaped and clipped. */
const shown = (v) => String(JSON.stringify(v)).slice(0, 40);
export const NORMS = ["pre_fc_norm_embedding", "pre_fc_norm_hidden", "layers.0.input_layernorm",
    "layers.0.self_attn.q_norm", "layers.0.self_attn.k_norm", "layers.0.post_attention_layernorm", "norm"];
const ATTENTION = ["fc", "layers.0.self_attn.q_proj", "layers.0.self_attn.k_proj", "layers.0.self_attn.v_proj",
    "layers.0.self_attn.o_proj"];
const DENSE_MLP = ["layers.0.mlp.gate_proj", "layers.0.mlp.up_proj", "layers.0.mlp.down_proj"];
const MOE_LINEARS = { router: "layers.0.mlp.gate", sharedGate: "layers.0.mlp.shared_expert.gate_proj",
    sharedUp: "layers.0.mlp.shared_expert.up_proj", sharedDown: "layers.0.mlp.shared_expert.down_proj",
    sharedGateW: "layers.0.mlp.shared_expert_gate" };
const MOE_MARKS = ["layers.0.mlp.gate.", "layers.0.mlp.experts.", "layers.0.mlp.switch_mlp.", "layers.0.mlp.shared_expert"];
const FUSED = ["layers.0.mlp.experts.gate_up_proj", "layers.0.mlp.experts.down_proj"];
const PER_EXPERT = /^layers\.0\.mlp\.experts\.(\d+)\.(gate_proj|up_proj|down_proj)\.(weight|scales|biases)$/;
const EMBED_NAMES = ["model.language_model.embed_tokens.weight", "model.embed_tokens.weight",
    "language_model.model.embed_tokens.weight", "embed_tokens.weight"];
const HEAD_NAMES = ["lm_head.weight", "language_model.lm_head.weight"];
// ---- config (§1.3, §12.1) and quantization specs (§2, §11.5) ---------------------------------------------------
/** The MLX affine spec of one module path, or null when it is not quantized. */
export class Quant {
    defaults = {};
    overrides = new Map();
    constructor(q) {
        this.present = q !== null && typeof q === "object" && !Array.isArray(q);
        for (const [k, v] of Object.entries(this.present ? q : {})) {
            if (v === false || (v !== null && typeof v === "object")) {
                this.overrides.set(k.startsWith("mtp.") ? k.slice(4) : k, v);
            }
            else {
                this.defaults[k] = v;
            }
        }
    }
    present;
    spec(path) {
        const o = this.overrides.get(path);
        if (!this.present || o === false)
            return null;
        const s = { ...this.defaults, ...(o ?? {}) };
        if (s.bits === undefined || s.group_size === undefined)
            return null;
        return { bits: Number(s.bits), group: Number(s.group_size), mode: s.mode ?? "affine" };
    }
}
export class Config {
    hidden;
    heads;
    kvHeads;
    headDim;
    eps;
    theta;
    rotary; // R = trunc(D · partial_rotary_factor)
    quant;
    tie;
    vocab;
    experts; // §12.1, checked against the tensors once the layer is MoE
    topK;
    moeWidth;
    sharedWidth;
    normTopkProb;
    constructor(cfg) {
        const tc = cfg.text_config;
        const text = (tc !== null && typeof tc === "object" && !Array.isArray(tc) ? tc : cfg);
        const need = (key) => {
            const v = text[key];
            if (typeof v !== "number" || !Number.isFinite(v))
                throw incompatible(`load: config has no numeric '${key}' (spec §1.3)`);
            return v;
        };
        const count = (key, v) => {
            if (!Number.isSafeInteger(v) || v <= 0 || v > 2 ** 24) {
                throw incompatible(`load: config '${key}' = ${shown(v)}, expected an integer in [1, 2^24] (spec §1.3)`);
            }
            return v;
        };
        this.hidden = count("hidden_size", need("hidden_size"));
        this.heads = count("num_attention_heads", need("num_attention_heads"));
        this.kvHeads = count("num_key_value_heads", need("num_key_value_heads"));
        this.headDim = count("head_dim", text.head_dim ?? Math.floor(this.hidden / this.heads));
        this.eps = need("rms_norm_eps");
        const rp = text.rope_parameters;
        const rope = (rp !== null && typeof rp === "object" ? rp : {});
        const prf = Number(rope.partial_rotary_factor ?? text.partial_rotary_factor ?? 1.0);
        this.theta = Number(rope.rope_theta ?? text.rope_theta ?? 10000.0);
        this.rotary = Math.trunc(this.headDim * prf);
        if (this.heads % this.kvHeads) {
            throw incompatible(`load: num_key_value_heads = ${this.kvHeads} must divide num_attention_heads = ${this.heads}`);
        }
        if (!(this.rotary % 2 === 0 && this.rotary >= 0 && this.rotary <= this.headDim) || !(this.theta > 0)) {
            throw incompatible(`load: rotary dims ${this.rotary} must be even and within head_dim ${this.headDim}, θ = ${this.theta} positive`);
        }
        this.quant = new Quant(cfg.quantization ?? cfg.quantization_config ?? text.quantization ?? text.quantization_config);
        this.tie = cfg.tie_word_embeddings ?? text.tie_word_embeddings;
        this.vocab = text.vocab_size;
        const optional = (key) => (text[key] === undefined || text[key] === null ? null : count(key, text[key]));
        this.experts = optional("num_experts");
        this.topK = optional("num_experts_per_tok");
        this.moeWidth = optional("moe_intermediate_size");
        this.sharedWidth = optional("shared_expert_intermediate_size");
        const ntp = text.norm_topk_prob ?? true;
        if (typeof ntp !== "boolean")
            throw incompatible(`load: config 'norm_topk_prob' = ${shown(ntp)}, expected true or false (spec §12.1)`);
        this.normTopkProb = ntp;
    }
}
// ---- float decoding and MLX affine dequantization (§2) ---------------------------------------------------------
/** A float tensor's elements widened exactly to float64 (F64, F32, F16, BF16). */
export function floats(t, name) {
    const n = t.bytes.byteLength;
    const v = new DataView(t.bytes.buffer, t.bytes.byteOffset, n);
    switch (t.dtype) {
        case "F32": return Float64Array.from({ length: n / 4 }, (_, i) => v.getFloat32(4 * i, true));
        case "BF16": {
            const bits = new Uint32Array(n / 2);
            for (let i = 0; i < bits.length; i++)
                bits[i] = v.getUint16(2 * i, true) << 16;
            return Float64Array.from(new Float32Array(bits.buffer));
        }
        case "F64":
        case "F16": return new Tensor(t.dtype, t.shape, t.bytes).floats();
        default: throw incompatible(`load: tensor '${name}' has dtype ${t.dtype}, expected a float dtype (spec §1.2)`);
    }
}
/** w[o, i] = scales[o, i / group] · q[o, i] + biases[o, i / group]; codes of `bits` bits form a little-endian bit
 * stream per row of little-endian uint32 words. */
export function dequantize(path, weight, scales, biases, quant) {
    const spec = quant.spec(path);
    if (spec === null)
        throw incompatible(`load: linear '${path}' is quantized but has no quant spec (spec §2)`);
    const { bits, group, mode } = spec;
    if (mode !== "affine" || ![2, 3, 4, 5, 6, 8].includes(bits) || ![32, 64, 128].includes(group)) {
        throw incompatible(`load: linear '${path}' quantization bits ${bits} group ${group} mode ${shown(mode)} `
            + "unsupported (spec §2: affine, bits 2/3/4/5/6/8, groups 32/64/128)");
    }
    const s = floats(scales, path + ".scales");
    const b = biases ? floats(biases, path + ".biases") : new Float64Array(s.length);
    const [out, groups] = scales.shape.length === 2 ? scales.shape : [-1, -1];
    const n = groups * group;
    if (weight.dtype !== "U32" || weight.shape.length !== 2 || weight.shape[0] !== out || weight.shape[1] * 32 !== n * bits
        || b.length !== s.length) {
        throw incompatible(`load: '${path}' weight ${weight.dtype} [${weight.shape.join(", ")}], scales [${scales.shape.join(", ")}] `
            + `do not describe a ${bits}-bit affine linear (spec §2)`);
    }
    const words = new DataView(weight.bytes.buffer, weight.bytes.byteOffset, weight.bytes.byteLength);
    const perRow = weight.shape[1];
    const mask = 2 ** bits - 1;
    const w = new Float64Array(out * n);
    for (let o = 0; o < out; o++) {
        for (let i = 0; i < n; i++) {
            const bit = i * bits, word = o * perRow + (bit >>> 5), shift = bit & 31;
            let q = words.getUint32(4 * word, true) >>> shift;
            if (shift + bits > 32)
                q |= words.getUint32(4 * word + 4, true) << (32 - shift);
            const g = o * groups + Math.floor(i / group);
            w[o * n + i] = s[g] * ((q & mask) >>> 0) + b[g];
        }
    }
    return { w, out, in: n };
}
/** A linear `path` (`.weight`, or `.weight`/`.scales`/`.biases` when quantized). */
function linear(t, path, quant, where) {
    const weight = t.get(path + ".weight");
    if (weight === undefined)
        throw incompatible(`load: missing tensor '${path}.weight' in ${where} (spec §1.2)`);
    const scales = t.get(path + ".scales");
    if (scales)
        return dequantize(path, weight, scales, t.get(path + ".biases"), quant);
    if (weight.shape.length !== 2)
        throw incompatible(`load: '${path}.weight' has shape [${weight.shape.join(", ")}], expected [out, in]`);
    return { w: floats(weight, path + ".weight"), out: weight.shape[0], in: weight.shape[1] };
}
/** Slice e of a stacked [E, out, ·] tensor. */
function slice(t, e) {
    const per = t.bytes.byteLength / t.shape[0]; // shape[0] > e ≥ 0
    return { dtype: t.dtype, shape: t.shape.slice(1), bytes: t.bytes.subarray(e * per, (e + 1) * per) };
}
function moeWeights(t, quant, where) {
    const mlp = [...t.keys()].filter((n) => n.startsWith("layers.0.mlp.")).sort();
    const dense = mlp.find((n) => DENSE_MLP.some((p) => n.startsWith(p + ".")));
    if (dense)
        throw incompatible(`load: dense MLP tensor '${dense}' beside MoE tensors in ${where}: a layer is dense or MoE, not both (spec §12.2)`);
    const per = mlp.filter((n) => PER_EXPERT.test(n));
    const fused = mlp.filter((n) => FUSED.some((f) => n === f || n.startsWith(f + ".")));
    const stacked = mlp.filter((n) => n.startsWith("layers.0.mlp.switch_mlp."));
    const present = [["per-expert", per], ["fused", fused], ["stacked", stacked]].filter(([, g]) => g.length);
    if (present.length !== 1) {
        throw incompatible(`load: the MoE layer in ${where} has ${present.length ? present.map(([n, g]) => `${n} experts ('${g[0]}')`).join(" and ")
            : "no routed experts"}, expected exactly one layout: per-expert, fused or stacked (spec §12.2)`);
    }
    const [layout, names] = present[0];
    const known = new Set([...names, ...Object.values(MOE_LINEARS).flatMap((p) => [".weight", ".scales", ".biases"].map((s) => p + s))]);
    const stray = mlp.find((n) => !known.has(n));
    if (stray)
        throw incompatible(`load: unexpected tensor '${stray}' in the ${layout} MoE layer of ${where} (spec §12.2)`);
    const lin = (p) => linear(t, p, quant, where);
    const m = { layout, router: lin(MOE_LINEARS.router), sharedGate: lin(MOE_LINEARS.sharedGate), sharedUp: lin(MOE_LINEARS.sharedUp),
        sharedDown: lin(MOE_LINEARS.sharedDown), sharedGateW: lin(MOE_LINEARS.sharedGateW), gate: [], up: [], down: [] };
    if (layout === "per-expert") {
        const idx = [...new Set(per.map((n) => Number(PER_EXPERT.exec(n)[1])))].sort((a, b) => a - b);
        const gap = idx.findIndex((e, i) => e !== i);
        if (gap >= 0)
            throw incompatible(`load: expert ${gap} of ${where} is missing while expert ${idx[idx.length - 1]} is present; expert indices must run 0 … E−1 (spec §12.2)`);
        for (const e of idx) {
            m.gate.push(lin(`layers.0.mlp.experts.${e}.gate_proj`));
            m.up.push(lin(`layers.0.mlp.experts.${e}.up_proj`));
            m.down.push(lin(`layers.0.mlp.experts.${e}.down_proj`));
        }
    }
    else if (layout === "fused") {
        const [gu, dn] = FUSED.map((f) => {
            const x = t.get(f);
            if (x === undefined || fused.some((n) => n.startsWith(f + "."))) {
                throw incompatible(`load: fused experts need '${f}' itself, dense only, in ${where} (spec §12.2)`);
            }
            if (x.shape.length !== 3)
                throw incompatible(`load: '${f}' has shape [${x.shape.join(", ")}], expected 3 axes (spec §12.2)`);
            return x;
        });
        if (gu.shape[1] % 2)
            throw incompatible(`load: '${FUSED[0]}' has shape [${gu.shape.join(", ")}], expected [E, 2·I_e, H] (spec §12.2)`);
        const i = gu.shape[1] / 2, h = gu.shape[2];
        for (let e = 0; e < gu.shape[0]; e++) {
            const both = floats(slice(gu, e), FUSED[0]); // rows [0, I_e) gate, [I_e, 2·I_e) up: not interleaved
            m.gate.push({ w: both.slice(0, i * h), out: i, in: h });
            m.up.push({ w: both.slice(i * h), out: i, in: h });
        }
        for (let e = 0; e < dn.shape[0]; e++)
            m.down.push({ w: floats(slice(dn, e), FUSED[1]), out: dn.shape[1], in: dn.shape[2] });
    }
    else {
        for (const [proj, into] of [["gate_proj", m.gate], ["up_proj", m.up], ["down_proj", m.down]]) {
            const path = `layers.0.mlp.switch_mlp.${proj}`;
            const parts = [".weight", ".scales", ".biases"].map((s) => t.get(path + s));
            if (parts[0] === undefined)
                throw incompatible(`load: missing tensor '${path}.weight' in ${where} (spec §12.2)`);
            const e = parts[0].shape[0];
            if (parts.some((x) => x && (x.shape.length !== 3 || x.shape[0] !== e))) {
                throw incompatible(`load: '${path}' tensors are not stacked [E, out, ·] (spec §12.2)`);
            }
            for (let k = 0; k < e; k++) {
                const one = new Map();
                parts.forEach((x, j) => x && one.set(path + [".weight", ".scales", ".biases"][j], slice(x, k)));
                into.push(linear(one, path, quant, where));
            }
        }
    }
    if (m.gate.length === 0)
        throw incompatible(`load: the ${layout} MoE layer of ${where} holds no experts (spec §12.2)`);
    const [e, i, h] = [m.gate.length, m.gate[0].out, m.gate[0].in];
    const shapes = [["gate_proj", m.gate, i, h], ["up_proj", m.up, i, h], ["down_proj", m.down, h, i]];
    for (const [name, list, out, inn] of shapes) {
        const bad = list.findIndex((l) => l.out !== out || l.in !== inn);
        if (list.length !== e || bad >= 0) {
            throw incompatible(`load: the ${layout} experts' ${name} ${bad >= 0 ? `of expert ${bad} is [${list[bad].out}, ${list[bad].in}]` : `has ${list.length} experts`}, `
                + `expected ${e} of [${out}, ${inn}] from expert 0's gate projection (spec §12.2)`);
        }
    }
    return m;
}
function isDir(p) {
    return statSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false;
}
function isFile(p) {
    return statSync(p, { throwIfNoEntry: false })?.isFile() ?? false;
}
function readJson(path) {
    const t = readText(path);
    let v;
    try {
        v = JSON.parse(t);
    }
    catch (e) {
        throw malformed(`load: ${path} is not valid JSON: ${e.message.split("\n")[0]}`);
    }
    if (v === null || typeof v !== "object" || Array.isArray(v))
        throw malformed(`load: ${path} is not a JSON object`);
    return v;
}
const MAX_JSON_BYTES = 64 * 1024 * 1024;
/** A small text file, at most 64 MiB (SECURITY.md), as UTF-8. */
function readText(path) {
    let fd;
    try {
        fd = openSync(path, "r");
    }
    catch (e) {
        throw malformed(`load: cannot read ${path}: ${e.message.split("\n")[0]}`);
    }
    try {
        const size = fstatSync(fd).size;
        if (size > MAX_JSON_BYTES)
            throw malformed(`load: ${path} is ${size} bytes, more than the ${MAX_JSON_BYTES} a JSON document may have`);
        const b = new Uint8Array(size);
        for (let got = 0; got < size;) {
            const k = readSync(fd, b, got, size - got, got);
            if (k <= 0)
                break;
            got += k;
        }
        return new TextDecoder("utf-8", { fatal: true }).decode(b);
    }
    catch (e) {
        throw e instanceof MtpError ? e : malformed(`load: cannot read ${path}: ${e.message.split("\n")[0]}`);
    }
    finally {
        closeSync(fd);
    }
}
/** Every *.safetensors file of a directory (sharded or not), by tensor name. */
function loadStore(directory, exclude = []) {
    const store = new Map();
    for (const f of readdirSync(directory).filter((f) => f.endsWith(".safetensors") && !exclude.includes(f)).sort()) {
        for (const [name, t] of readSafetensors(`${directory}/${f}`)) {
            if (store.has(name))
                throw malformed(`load: tensor '${name}' appears in two shards of ${directory}`);
            store.set(name, t);
        }
    }
    return store;
}
function headLinear(t, weightName, quant) {
    return linear(t, weightName.slice(0, -".weight".length), quant, weightName);
}
function hfHead(store, quant, tie, where) {
    const en = EMBED_NAMES.find((n) => store.has(n));
    if (en === undefined)
        throw incompatible(`load: no embedding (${EMBED_NAMES.join(" or ")}) in ${where} (spec §1.7)`);
    const embed = headLinear(store, en, quant);
    const hn = HEAD_NAMES.find((n) => store.has(n));
    if (hn !== undefined)
        return [embed, headLinear(store, hn, quant)];
    if (tie === false)
        throw incompatible(`load: missing tensor 'lm_head.weight' in ${where} (tie_word_embeddings is false, spec §1.7)`);
    return [embed, embed];
}
function companionHead(directory, cfg) {
    const th = `${directory}/target_head.safetensors`;
    if (isFile(th)) {
        const t = readSafetensors(th);
        if (!t.has("embed_tokens.weight"))
            throw incompatible(`load: ${th} has no embed_tokens.weight`);
        const embed = headLinear(t, "embed_tokens.weight", cfg.quant);
        return [embed, t.has("lm_head.weight") ? headLinear(t, "lm_head.weight", cfg.quant) : embed];
    }
    const tdir = `${directory}/target`;
    if (isDir(tdir)) {
        const tcfg = isFile(`${tdir}/config.json`) ? readJson(`${tdir}/config.json`) : null;
        const text = (tcfg && typeof tcfg.text_config === "object" && tcfg.text_config ? tcfg.text_config : tcfg ?? {});
        const quant = tcfg ? new Quant(tcfg.quantization ?? tcfg.quantization_config) : cfg.quant;
        return hfHead(loadStore(tdir), quant, tcfg?.tie_word_embeddings ?? text.tie_word_embeddings, tdir);
    }
    throw incompatible(`load: companion ${directory} has neither target_head.safetensors nor a target/ directory (the target's embedding and head)`);
}
/** Reads a model directory in the raw Hugging Face layout or the companion layout (decided by config.json's
 * model_type, as the runner's loader does). */
export function loadModel(directory) {
    if (typeof directory !== "string" || !isDir(directory))
        throw incompatible(`load: ${String(directory).slice(0, 200)} is not a directory`);
    if (!isFile(`${directory}/config.json`))
        throw incompatible(`load: missing config.json in ${directory} (spec §1.3)`);
    const raw = readJson(`${directory}/config.json`);
    const cfg = new Config(raw);
    const companion = raw.model_type === "qwen3_5_mtp";
    const store = loadStore(directory, companion ? ["target_head.safetensors"] : []);
    const mtp = new Map();
    for (const [n, t] of store) {
        if (companion && !n.startsWith("mtp."))
            mtp.set(n, t);
        if (!companion && n.startsWith("mtp."))
            mtp.set(n.slice(4), t);
    }
    if (!companion && mtp.size === 0) {
        throw incompatible(`load: ${directory} has no mtp.* tensors and config model_type is ${shown(raw.model_type ?? null)}, `
            + "not 'qwen3_5_mtp': cannot determine the layout (spec §11.4)");
    }
    const norms = {};
    for (const n of NORMS) {
        const t = mtp.get(n + ".weight");
        if (t === undefined)
            throw incompatible(`load: missing tensor '${n}.weight' in ${directory} (spec §1.2)`);
        // §1.6, §11.4: raw HF norms are zero-centred; the gain 1 + w is formed once, in float32
        norms[n] = companion ? floats(t, n) : floats(t, n).map((w) => Math.fround(Math.fround(w) + 1));
    }
    const moe = [...mtp.keys()].some((n) => MOE_MARKS.some((p) => n.startsWith(p))); // §12.1: the tensors decide
    const linears = {};
    for (const p of moe ? ATTENTION : [...ATTENTION, ...DENSE_MLP])
        linears[p] = linear(mtp, p, cfg.quant, directory);
    const [embed, head] = companion ? companionHead(directory, cfg) : hfHead(store, cfg.quant, cfg.tie, directory);
    const weights = { norms, linears, moe: moe ? moeWeights(mtp, cfg.quant, directory) : null, embed, head };
    checkShapes(cfg, weights);
    return { cfg, weights };
}
function checkShapes(cfg, w) {
    const { hidden: h, heads: nh, kvHeads: nkv, headDim: d } = cfg;
    const v = w.embed.out;
    const want = [
        ["fc", w.linears.fc, h, 2 * h], ["layers.0.self_attn.q_proj", w.linears["layers.0.self_attn.q_proj"], nh * 2 * d, h],
        ["layers.0.self_attn.k_proj", w.linears["layers.0.self_attn.k_proj"], nkv * d, h],
        ["layers.0.self_attn.v_proj", w.linears["layers.0.self_attn.v_proj"], nkv * d, h],
        ["layers.0.self_attn.o_proj", w.linears["layers.0.self_attn.o_proj"], h, nh * d],
        ["embedding", w.embed, v, h], ["head", w.head, v, h],
    ];
    for (const n of NORMS)
        want.push([n + ".weight", w.norms[n], n.endsWith("q_norm") || n.endsWith("k_norm") ? d : h, 1]);
    if (w.moe === null) {
        const i = w.linears["layers.0.mlp.gate_proj"].out;
        want.push(["layers.0.mlp.gate_proj", w.linears["layers.0.mlp.gate_proj"], i, h], ["layers.0.mlp.up_proj", w.linears["layers.0.mlp.up_proj"], i, h], ["layers.0.mlp.down_proj", w.linears["layers.0.mlp.down_proj"], h, i]);
    }
    else {
        want.push(...checkMoe(cfg, w.moe));
    }
    for (const [name, a, out, inn] of want) {
        const [ro, ri] = a instanceof Float64Array ? [a.length, 1] : [a.out, a.in];
        if (ro !== out || ri !== inn) {
            throw incompatible(`load: '${name}' has shape [${ro}${ri === 1 && inn === 1 ? "" : `, ${ri}`}], expected [${out}${inn === 1 ? "" : `, ${inn}`}] (spec §1.2)`);
        }
        const data = a instanceof Float64Array ? a : a.w;
        const bad = data.findIndex((x) => !Number.isFinite(x));
        if (bad >= 0)
            throw incompatible(`load: tensor '${name}' element ${bad} is ${data[bad]}, not finite`);
    }
    if (cfg.vocab !== undefined && cfg.vocab !== null && Number(cfg.vocab) !== v) {
        throw incompatible(`load: embedding has ${v} rows, expected vocab_size = ${shown(cfg.vocab)} from config (spec §1.7)`);
    }
}
/** §12.1, §12.2: the MoE tensors' shapes against H and each other, and E, I_e, I_s, K against the config. */
function checkMoe(cfg, m) {
    const h = cfg.hidden, e = m.gate.length, i = m.gate[0].out, s = m.sharedGate.out;
    if (m.gate[0].in !== h)
        throw incompatible(`load: the ${m.layout} experts take inputs of width ${m.gate[0].in}, expected H = ${h} (spec §12.2)`);
    for (const [key, have, declared] of [["num_experts", e, cfg.experts], ["moe_intermediate_size", i, cfg.moeWidth],
        ["shared_expert_intermediate_size", s, cfg.sharedWidth]]) {
        if (declared !== null && declared !== have)
            throw incompatible(`load: the tensors hold ${key} = ${have}, config ${key} = ${declared} (spec §12.1)`);
    }
    if (cfg.topK === null)
        throw incompatible("load: config has no 'num_experts_per_tok', required for a MoE layer (spec §12.1)");
    if (cfg.topK > e)
        throw incompatible(`load: config num_experts_per_tok = ${cfg.topK} outside [1, ${e}], the expert count (spec §12.1)`);
    return [["layers.0.mlp.gate.weight", m.router, e, h], ["layers.0.mlp.shared_expert.gate_proj.weight", m.sharedGate, s, h],
        ["layers.0.mlp.shared_expert.up_proj.weight", m.sharedUp, s, h], ["layers.0.mlp.shared_expert.down_proj.weight", m.sharedDown, h, s],
        ["layers.0.mlp.shared_expert_gate.weight", m.sharedGateW, 1, h],
        ...m.gate.map((l, k) => [`expert ${k} gate_proj`, l, i, h]),
        ...m.up.map((l, k) => [`expert ${k} up_proj`, l, i, h]),
        ...m.down.map((l, k) => [`expert ${k} down_proj`, l, h, i])];
}
