// The example engine's maths outside the block (examples/mtp_sampling.ts, safetensors.ts, mtp_model.ts), against
// values from elsewhere: Threefry-2x32-20's published known-answer vectors (Random123), draws of the numpy engine's
// sampler (adapters/python/examples/numpy_mtp/sampling.py) on the same float32 log-probs, MLX affine codes packed
// here bit by bit, and hostile safetensors files. The block itself is held to the Java reference by `mtp tck`
// (tools SdkSkeletonTckTest). node --test adapters/typescript/test/
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { argmax, mlxExp, sampleRow, threefry2x32 } from "../dist/examples/mtp_sampling.js";
import { readSafetensors } from "../dist/examples/safetensors.js";
import { Quant, dequantize, loadModel } from "../dist/examples/mtp_model.js";

test("threefry2x32 gives Random123's known answers", () => {
  const hex = (a) => a.map((x) => x.toString(16).padStart(8, "0")).join(" ");
  // key (k0, k1), counter (c0, c1) -> the kat_vectors lines "threefry2x32 20 c0 c1 k0 k1 -> out"
  assert.equal(hex(threefry2x32(0, 0, 0, 0)), "6b200159 99ba4efe");
  assert.equal(hex(threefry2x32(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff)), "1cb996fc bb002be7");
  assert.equal(hex(threefry2x32(0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3)), "c4923a9c 483df7a0");
});

test("mlxExp is exp within float32 rounding, and saturates as MLX's does", () => {
  for (let x = -87; x < 88; x += 0.37) {   // results in float32's normal range
    // MLX scales by 1.442695 for log2(e) = 1.4426950409 and rounds in f32: relative errors up to 3.7e-6 over this
    // range (measured on the numpy twin of this function as well)
    const want = Math.exp(Math.fround(x));
    assert.ok(Math.abs(mlxExp(x) - want) <= 4e-6 * want, `x = ${x}: ${mlxExp(x)} vs ${want}`);
    assert.equal(mlxExp(x), Math.fround(mlxExp(x)), "a float32 value");
  }
  // numpy_mtp.sampling.mlx_exp(np.float32(x)), bit for bit
  assert.equal(mlxExp(Math.fround(-86.26)), 3.4495091673021146e-38);
  assert.equal(mlxExp(Math.fround(3.3)), 27.112634658813477);
  assert.equal(mlxExp(Math.fround(-0.7)), 0.49658530950546265);
  assert.equal(mlxExp(0), 1);
  assert.equal(mlxExp(-100), 0);
  assert.equal(mlxExp(-Infinity), 0);
  assert.equal(mlxExp(89), Infinity);
  assert.ok(Number.isNaN(mlxExp(NaN)));
});

// log-probs exactly representable in float32 (eighths), a permutation of 0 … −63/8 over 64 tokens
const LP = Float32Array.from({ length: 64 }, (_, i) => -((i * 37) % 64) / 8);
const sampler = (temperature, topK, topP, seed) => ({ temperature, topK, topP, seed: BigInt(seed) });

test("seeded draws equal the numpy engine's sampler's on the same log-probs", () => {
  // (temperature, top_k, top_p, seed, step) -> numpy_mtp.sampling.sample_row(LP, ...)
  const cases = [[1.0, 0, 1.0, 0n, 1n, 11], [0.7, 0, 0.9, 42n, 5n, 52], [1.3, 10, 1.0, 2n ** 63n + 5n, 17n, 45],
    [0.5, 5, 0.5, 12345n, 0n, 45], [2.0, 0, 0.95, 2n ** 64n - 1n, 1000n, 28], [1.0, 3, 0.99, 7n, 3n, 26],
    [4.0, 0, 1.0, 99n, 2n, 26]];
  for (const [t, k, p, seed, step, want] of cases) {
    assert.equal(sampleRow(LP, sampler(t, k, p, seed), step), want, `T ${t} top_k ${k} top_p ${p} seed ${seed} step ${step}`);
  }
  const numpy = [14, 52, 37, 20, 16, 47, 45, 14, 58, 47, 28, 21, 0, 52, 2, 40, 7, 52, 0, 59, 47, 21, 16, 59, 35, 54, 0,
    45, 63, 7, 54, 14, 7, 21, 26, 0, 7, 35, 7, 21];   // T 1.5, seed s, step 3s + 1
  assert.deepEqual(numpy.map((_, s) => sampleRow(LP, sampler(1.5, 0, 1.0, s), BigInt(3 * s + 1))), numpy);
});

test("greedy is the argmax with the lowest index on ties, whatever the seed", () => {
  const lp = Float32Array.from([-3, -1, -2, -1, -1.5]);
  assert.equal(argmax(lp), 1);
  assert.equal(sampleRow(lp, sampler(0, 0, 1, 77), 9n), 1);
  assert.equal(sampleRow(LP, sampler(0, 5, 0.5, 3), 0n), 0);   // LP's largest is token 0 (0 / 8)
  assert.equal(sampleRow(LP, sampler(1e-3, 0, 1, 3), 5n), 0, "a tiny temperature draws the argmax");
});

/** MLX affine codes of `bits` bits packed into little-endian uint32 words, bit by bit (a row of n codes). */
function pack(codes, bits) {
  const words = new Uint32Array(codes.length * bits / 32);
  codes.forEach((q, i) => {
    for (let j = 0; j < bits; j++) {
      const at = i * bits + j;
      if ((q >> j) & 1) words[at >> 5] |= 1 << (at & 31);
    }
  });
  return { dtype: "U32", shape: [1, words.length], bytes: new Uint8Array(words.buffer) };
}
const f32 = (values, shape) => ({ dtype: "F32", shape, bytes: new Uint8Array(Float32Array.from(values).buffer) });

test("dequantize unpacks 4-bit and word-straddling 3-bit codes: w = scale · q + bias per group", () => {
  const quant = (bits) => new Quant({ bits, group_size: 32 });
  const four = Array.from({ length: 64 }, (_, i) => i % 16);
  const l4 = dequantize("fc", pack(four, 4), f32([0.5, 2], [1, 2]), f32([-1, 0.25], [1, 2]), quant(4));
  assert.deepEqual([l4.out, l4.in], [1, 64]);
  assert.deepEqual(Array.from(l4.w), four.map((q, i) => (i < 32 ? 0.5 * q - 1 : 2 * q + 0.25)));
  const three = Array.from({ length: 32 }, (_, i) => (i * 5) % 8);   // codes 10, 21 straddle words 0/1 and 1/2
  const l3 = dequantize("fc", pack(three, 3), f32([2], [1, 1]), undefined, quant(3));
  assert.deepEqual(Array.from(l3.w), three.map((q) => 2 * q));
  assert.throws(() => dequantize("fc", pack(four, 4), f32([1, 1], [1, 2]), undefined, new Quant(null)),
    { message: /^load: linear 'fc' is quantized but has no quant spec/ });
  assert.throws(() => dequantize("fc", pack(four, 4), f32([1], [1, 1]), undefined, quant(4)), { message: /do not describe a 4-bit/ });
});

/** A safetensors file: the 8-byte header length, the JSON header, the data. */
function safetensors(header, data = new Uint8Array(0), claimed = null) {
  const h = new TextEncoder().encode(typeof header === "string" ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, claimed ?? BigInt(h.length), true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

test("safetensors: a well-formed file reads; every hostile one is one MALFORMED_FILE line, before allocating", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "mtp-st-"));
  const file = (name, bytes) => { const p = path.join(dir, name); writeFileSync(p, bytes); return p; };
  const data = new Uint8Array(new Float32Array([1.5, -2, 0.25, 8]).buffer);
  try {
    const good = readSafetensors(file("good.safetensors", safetensors({ __metadata__: { a: "b" },
      a: { dtype: "F32", shape: [2], data_offsets: [0, 8] }, b: { dtype: "BF16", shape: [2, 2], data_offsets: [8, 16] } }, data)));
    assert.deepEqual([...good.keys()], ["a", "b"]);
    assert.deepEqual(Array.from(new Float32Array(good.get("a").bytes.slice().buffer)), [1.5, -2]);
    const bad = {
      "header length beyond the file": safetensors({}, new Uint8Array(0), 1000n),
      "header length of 2^60": safetensors({}, new Uint8Array(0), 2n ** 60n),
      "not JSON": safetensors("{\"a\": "),
      "not an object": safetensors("[1, 2]"),
      "offsets past the data": safetensors({ a: { dtype: "F32", shape: [4], data_offsets: [0, 16] } }, data.subarray(0, 8)),
      "size unlike the shape": safetensors({ a: { dtype: "F32", shape: [3], data_offsets: [0, 16] } }, data),
      "a shape whose bytes overflow": safetensors({ a: { dtype: "F64", shape: [2 ** 40, 2 ** 40], data_offsets: [0, 16] } }, data),
      "overlapping tensors": safetensors({ a: { dtype: "F32", shape: [3], data_offsets: [0, 12] },
        b: { dtype: "F32", shape: [2], data_offsets: [8, 16] } }, data),
      "an unknown dtype": safetensors({ a: { dtype: "F8_E4M3", shape: [16], data_offsets: [0, 16] } }, data),
      "a negative offset": safetensors({ a: { dtype: "F32", shape: [1], data_offsets: [-4, 0] } }, data),
      "too short": new Uint8Array(5),
      "a name that would split the message": safetensors({ "a\nb": { dtype: "F32", shape: [1], data_offsets: [0, 4] } }, data),
    };
    for (const [what, bytes] of Object.entries(bad)) {
      const p = file("bad.safetensors", bytes);
      assert.throws(() => readSafetensors(p), (e) => e.kind === "MALFORMED_FILE" && !e.message.includes("\n")
        && e.message.startsWith(`load: ${p}`), what);
    }
    assert.throws(() => readSafetensors(path.join(dir, "absent.safetensors")), (e) => e.kind === "MALFORMED_FILE");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a directory that is not a model is INCOMPATIBLE_MODEL, a broken config.json MALFORMED_FILE, in one line", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "mtp-model-"));
  const refused = (kind, pattern) => (e) => e.kind === kind && !e.message.includes("\n") && pattern.test(e.message);
  try {
    assert.throws(() => loadModel(path.join(dir, "absent")), refused("INCOMPATIBLE_MODEL", /is not a directory$/));
    assert.throws(() => loadModel(dir), refused("INCOMPATIBLE_MODEL", /^load: missing config\.json/));
    writeFileSync(path.join(dir, "config.json"), "{\"hidden_size\": ");
    assert.throws(() => loadModel(dir), refused("MALFORMED_FILE", /is not valid JSON/));
    writeFileSync(path.join(dir, "config.json"), JSON.stringify({ model_type: "qwen3_5_mtp", hidden_size: 64 }));
    assert.throws(() => loadModel(dir), refused("INCOMPATIBLE_MODEL", /no numeric 'num_attention_heads'/));
    writeFileSync(path.join(dir, "config.json"), JSON.stringify({ model_type: "qwen3_5_mtp", hidden_size: 64,
      num_attention_heads: 4, num_key_value_heads: 3, rms_norm_eps: 1e-6 }));
    assert.throws(() => loadModel(dir), refused("INCOMPATIBLE_MODEL", /num_key_value_heads = 3 must divide/));
    writeFileSync(path.join(dir, "config.json"), JSON.stringify({ model_type: "qwen3_5", hidden_size: 64,
      num_attention_heads: 4, num_key_value_heads: 2, rms_norm_eps: 1e-6 }));
    assert.throws(() => loadModel(dir), refused("INCOMPATIBLE_MODEL", /no mtp\.\* tensors .*cannot determine the layout/));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
