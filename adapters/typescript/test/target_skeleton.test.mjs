// The target row skeleton (src/target_rows.ts) over the fake target (examples/fake_target.ts): the Java
// TargetContract's kinds and messages (copied here from TargetContract.java, RowContract.java and
// AbstractTargetRows.java, not from target_rows.ts) for the target bad-call catalogue's calls, rows unchanged; a
// failure at any step of any call changes nothing; checkpoints round-trip with the digest of WIRE.md §5.3; and the
// skeleton's engine answers over the wire. node --test adapters/typescript/test/
import { spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import assert from "node:assert/strict";
import { MtpError, Server, Tensor, TargetShape, targetCheckpointDigest, withTarget } from "../dist/src/index.js";
import { FakeTargetRows } from "../dist/examples/fake_target.js";

const V = 32, H = 8, NKV = 1, D = 4, HV = 2, DK = 4, DV = 4, K = 4, CONV = 2 * 1 * DK + HV * DV;
const CONFIG = { hiddenSize: H, numHeads: 2, numKvHeads: NKV, headDim: D, vocabSize: V, intermediateSize: 16,
  layerTypes: ["linear_attention", "linear_attention", "full_attention"],
  gdn: { numKeyHeads: 1, numValueHeads: HV, keyHeadDim: DK, valueHeadDim: DV, convKernel: K } };
const N_GDN = 2, N_FULL = 1;
const IA = "INVALID_ARGUMENT", IS = "ILLEGAL_STATE", IC = "INCOMPATIBLE_CHECKPOINT";

class Rows extends FakeTargetRows {
  constructor(config = CONFIG) { super(TargetShape.of(config, "target-id")); this.failAt = null; }
  reached(call, step) { if (this.failAt === `${call}/${step}`) throw new Error(`injected at ${call}/${step}`); }
}

const f32 = (values, shape) => Tensor.f32(values, shape);
const i32 = (values, shape) => Tensor.i32(values, shape);
const ids = (b, n, seed = 1) => i32(Array.from({ length: b * n }, (_, i) => (i * 5 + seed) % V), [b, n]);
const zeros = (shape) => new Array(shape.reduce((a, b) => a * b, 1)).fill(0);
const noise = (shape, seed) => Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(seed + i * 0.7) / 2);

/** What a runner observes of a group outside a round: P per row, each row's digest or refusal kind. */
function observe(g) {
  if (g.roundOpen()) return g.processedTokens().join(",");
  const out = [g.processedTokens().join(",")];
  for (let r = 0; r < g.rowCount(); r++) {
    try { out.push(g.capture(r).digest); } catch (e) { out.push(e.kind); }
  }
  return out.join(" ");
}

function refuses(g, call, kind, message) {
  const before = observe(g);
  assert.throws(call, (e) => {
    assert.ok(e instanceof MtpError, String(e));
    assert.deepEqual([e.kind, e.message, e.poisoned], [kind, message, false]);
    return true;
  });
  assert.equal(observe(g), before, "a refused call changed the rows");
}

function prefilled(rows = 2) {
  const g = new Rows();
  g.append(Array(rows).fill(null));
  g.prefill(ids(rows, 3));
  return g;
}

/** A well-formed checkpoint after p tokens (arbitrary values), some tensors replaced; sealed. */
function sealed(p, o = {}) {
  const cp = { schema: "qwen-target-v1", processedTokens: p, modelIdentity: "target-id",
    convWindows: f32(noise([N_GDN, CONV, K - 1], p), [N_GDN, CONV, K - 1]),
    recurrentStates: f32(noise([N_GDN, HV, DK, DV], p + 1), [N_GDN, HV, DK, DV]),
    keys: f32(noise([N_FULL, NKV, p, D], p + 2), [N_FULL, NKV, p, D]),
    values: f32(noise([N_FULL, NKV, p, D], p + 3), [N_FULL, NKV, p, D]), ...o };
  return { ...cp, digest: targetCheckpointDigest(cp) };
}

test("the target bad-call catalogue's calls: TargetContract's kinds and messages, rows unchanged", () => {
  const g = prefilled();
  refuses(g, () => g.append(null), IA, "append: checkpoint list is null (use null entries for empty rows)");
  refuses(g, () => g.filterRows(null), IA, "filterRows: keep is null");
  refuses(g, () => g.filterRows([-1]), IA, "filterRows: keep[0] = -1 outside [0, 2)");
  refuses(g, () => g.filterRows([2]), IA, "filterRows: keep[0] = 2 outside [0, 2)");
  refuses(g, () => g.filterRows([0, 0]), IA, "filterRows: keep[1] = 0 repeats a row");
  refuses(g, () => g.prefill(null), IA, "prefill: tokens is null");
  refuses(g, () => g.prefill(ids(3, 2)), IA, "prefill: tokens shape I32[3, 2], expected [2, L] (one row per group row, spec §5.4)");
  refuses(g, () => g.prefill(i32([], [2, 0])), IA, "prefill: tokens has L = 0 new positions, expected L ≥ 1 (spec §5.4)");
  refuses(g, () => g.prefill(i32([1, 2, -1, 3], [2, 2])), IA, `prefill: tokens[1, 0] = -1 outside the vocabulary [0, ${V})`);
  refuses(g, () => g.prefill(i32([1, 2, 3, V], [2, 2])), IA, `prefill: tokens[1, 1] = ${V} outside the vocabulary [0, ${V})`);
  refuses(g, () => g.prefill(f32([0, 0, 0, 0], [2, 2])), IA, "prefill: tokens dtype F32, expected I32 or I64");
  const wraps = new Tensor("I64", [2, 1], new Uint8Array(new BigInt64Array([1n, (1n << 32n) + 1n]).buffer));
  refuses(g, () => g.verify(wraps), IA, `verify: tokens[1, 0] = 4294967297 outside the vocabulary [0, ${V})`);
  refuses(g, () => g.verify(null), IA, "verify: tokens is null");
  refuses(g, () => g.verify(ids(3, 2)), IA, "verify: tokens shape I32[3, 2], expected [2, L] (one row per group row, spec §5.4)");
  refuses(g, () => g.verify(i32([], [2, 0])), IA, "verify: tokens has L = 0 new positions, expected L ≥ 1 (spec §5.4)");
  refuses(g, () => g.verify(ids(2, 66)), IA,
    "verify: width W = 66 tokens per row, more than the 65 a verify may take (the pending token and at most 64 drafts, spec §13.3)");
  refuses(g, () => g.commit([0, 0]), IS, "commit: no verify round is open (spec §13.3)");
  refuses(g, () => g.capture(-1), IA, "capture: row -1 outside [0, 2)");
  refuses(g, () => g.capture(2), IA, "capture: row 2 outside [0, 2)");
  g.append([null]);
  refuses(g, () => g.verify(ids(3, 2)), IS,
    "verify: row 2 has processed no token; prefill it first: a verify continues from the pending token (spec §13.3)");
  refuses(g, () => g.capture(2), IS, "capture: row 2 has processed no token yet (an empty row must be prefilled first, spec §13.3)");
  g.filterRows([0, 1]);
  g.verify(ids(2, 3, 7));
  for (const [call, f] of [["append", () => g.append([null])], ["filterRows", () => g.filterRows([])],
    ["prefill", () => g.prefill(ids(2, 1))], ["verify", () => g.verify(ids(2, 1))], ["capture", () => g.capture(0)]]) {
    refuses(g, f, IS, `${call}: a verify round is open; commit it first (spec §13.3)`);
  }
  refuses(g, () => g.commit(null), IA, "commit: accepted is null");
  refuses(g, () => g.commit([0, 0, 0]), IA, "commit: accepted has 3 entries, expected 2 (one per row)");
  refuses(g, () => g.commit([0, -1]), IA, "commit: accepted[1] = -1 outside [0, 2], the drafts of a verify of width 3 (spec §13.3); rows unchanged");
  refuses(g, () => g.commit([3, 0]), IA, "commit: accepted[0] = 3 outside [0, 2], the drafts of a verify of width 3 (spec §13.3); rows unchanged");
  assert.deepEqual(g.processedTokens(), [6, 6]);
  g.commit([2, 0]);
  assert.deepEqual(g.processedTokens(), [6, 4]);
  const empty = new Rows();
  refuses(empty, () => empty.prefill(i32([], [0, 1])), IS, "prefill: the group has no rows");
  refuses(empty, () => empty.verify(i32([], [0, 1])), IS, "verify: the group has no rows");
  g.close();
  refuses(g, () => g.filterRows([]), IS, "filterRows: the group is closed");
  refuses(g, () => g.capture(0), IS, "capture: the group is closed");
});

test("checkpoints: TargetContract.checkpoint's checks in order, the digest last", () => {
  const g = prefilled();
  const w = "append: checkpoint[1]";
  const bad = (cp) => () => g.append([null, cp]);
  refuses(g, bad(sealed(2, { schema: "qwen-target-v0" })), IC, `${w} has schema 'qwen-target-v0', expected 'qwen-target-v1' (spec §13.3)`);
  refuses(g, bad(sealed(2, { modelIdentity: "another-target" })), IC, `${w} belongs to target 'another-targ…', this group's target is target-id`);
  refuses(g, bad(sealed(0)), IC, `${w} has P = 0 processed tokens, outside [1, 1048576] (spec §13.3)`);
  refuses(g, bad(sealed(3, { convWindows: f32(zeros([N_GDN, CONV, K]), [N_GDN, CONV, K]) })), IC,
    `${w} convWindows shape F32[${N_GDN}, ${CONV}, ${K}], expected [${N_GDN}, ${CONV}, ${K - 1}]`);
  refuses(g, bad(sealed(3, { recurrentStates: f32(zeros([N_GDN, 1, DK, DV]), [N_GDN, 1, DK, DV]) })), IC,
    `${w} recurrentStates shape F32[${N_GDN}, 1, ${DK}, ${DV}], expected [${N_GDN}, ${HV}, ${DK}, ${DV}]`);
  refuses(g, bad(sealed(3, { recurrentStates: null })), IC, `${w} has no recurrentStates tensor`);
  refuses(g, bad(sealed(4, { keys: sealed(3).keys, values: sealed(3).values })), IC,
    `${w} keys shape F32[${N_FULL}, ${NKV}, 3, ${D}], expected [${N_FULL}, ${NKV}, 4, ${D}]`);
  refuses(g, bad(sealed(2, { values: null })), IC, `${w} has no values tensor`);
  const nan = zeros([N_GDN, HV, DK, DV]);
  nan[17] = NaN;
  refuses(g, bad(sealed(2, { recurrentStates: f32(nan, [N_GDN, HV, DK, DV]) })), IC, `${w} recurrentStates element 17 is not finite`);
  refuses(g, bad(sealed(2, { convWindows: i32(zeros([N_GDN, CONV, K - 1]), [N_GDN, CONV, K - 1]) })), IC,
    `${w} convWindows dtype I32, expected F32`);
  const changed = sealed(2);
  refuses(g, bad({ ...changed, convWindows: f32(noise([N_GDN, CONV, K - 1], 9), [N_GDN, CONV, K - 1]) }), IC,
    `${w} does not match its content digest: its label (schema, P, model identity) or its tensors were changed after capture (spec §13.3)`);
  refuses(g, bad({ ...sealed(2), digest: undefined }), IC,
    `${w} carries no content digest; a checkpoint comes from a capture, or from a file or peer that kept its digest (spec §13.3)`);
  refuses(g, () => g.append([null, sealed(2), sealed(3, { modelIdentity: "x" })]), IC,
    "append: checkpoint[2] belongs to target 'x', this group's target is target-id");
  const gdnOnly = new Rows({ ...CONFIG, layerTypes: ["linear_attention", "linear_attention"] });
  refuses(gdnOnly, () => gdnOnly.append([sealed(2)]), IC, "append: checkpoint[0] carries keys but the target has no layer that holds them");
  gdnOnly.append([sealed(2, { keys: null, values: null })]);
  assert.deepEqual(gdnOnly.processedTokens(), [2]);
});

test("a restored row continues exactly as the row it was captured from; a rollback leaves no trace", () => {
  const g = prefilled();
  const cp = g.capture(1);
  assert.equal(cp.digest, targetCheckpointDigest({ ...cp, digest: undefined }));
  assert.deepEqual([cp.convWindows.shape, cp.recurrentStates.shape, cp.keys.shape],
    [[N_GDN, CONV, K - 1], [N_GDN, HV, DK, DV], [N_FULL, NKV, 3, D]]);
  const h = new Rows();
  h.append([cp]);
  assert.equal(h.capture(0).digest, cp.digest);
  const next = ids(1, 4, 3);
  g.filterRows([1]);
  assert.deepEqual([...g.prefill(next).logits.data], [...h.prefill(next).logits.data]);
  assert.equal(g.capture(0).digest, h.capture(0).digest);
  const a = prefilled(1);
  const b = prefilled(1);
  a.verify(i32([5, 6, 7], [1, 3]));
  a.commit([1]);   // keeps 5, 6; 7 leaves no trace
  b.prefill(i32([5, 6], [1, 2]));
  assert.equal(a.capture(0).digest, b.capture(0).digest);
});

test("a failure at any step of any call changes nothing, and the call then succeeds as on a group that never failed", () => {
  const calls = { append: (g) => g.append([null]), filterRows: (g) => g.filterRows([1, 0]), prefill: (g) => g.prefill(ids(2, 4)),
    verify: (g) => g.verify(ids(2, 3, 2)), commit: (g) => g.commit([2, 1]) };
  const steps = ["append/publish", "filterRows/publish", "prefill/chunk forward", "prefill/publish", "verify/forward",
    "verify/publish", "commit/rollback", "commit/publish"];
  for (const at of steps) {
    const call = at.split("/")[0];
    const start = () => { const g = prefilled(); if (call === "commit") calls.verify(g); return g; };
    const g = start();
    const ref = start();
    const before = observe(g);
    g.failAt = at;
    assert.throws(() => calls[call](g), (e) => {
      if (at.endsWith("/publish")) return e instanceof Error && !(e instanceof MtpError); // outside the computation
      assert.deepEqual([e.kind, e.poisoned], ["BACKEND_FAILURE", false], at);
      assert.ok(e.message.startsWith(`${call}: Error: injected`), e.message);
      return true;
    }, at);
    assert.equal(observe(g), before, at);
    g.failAt = null;
    calls[call](g);
    calls[call](ref);
    for (const x of [g, ref]) if (x.roundOpen()) x.commit([1, 0]);
    assert.equal(observe(g), observe(ref), at);
  }
});

test("withTarget: the engine claims the capability and serves the skeleton over the wire's target ops", () => {
  class Drafter {   // an Engine class: its methods live on the prototype
    get name() { return "t"; }
    get version() { return "1"; }
    hello() { return { profiles: [], capabilities: { maxRows: 4 } }; }
    load() { throw new Error("no"); }
  }
  const drafter = new Drafter();
  const engine = withTarget(drafter, { load: (a) => TargetShape.of(a.config, a.identity), rows: (s) => new FakeTargetRows(s) });
  assert.deepEqual(engine.hello().capabilities, { maxRows: 4, target: true });
  assert.deepEqual([engine.name, engine.version, typeof engine.load], ["t", "1", "function"]);
  const server = new Server(engine, () => {});
  let id = 0;
  const call = (op, args = {}, tensors = []) => {
    const { reply } = server.handle({ header: { id: ++id, op, args }, tensors });
    const nl = reply.indexOf(10);
    return JSON.parse(new TextDecoder().decode(reply.subarray(0, nl)));
  };
  call("hello", { protocols: ["mtp-oracle-wire/1"] });
  assert.equal(call("loadTarget", { directory: "/t", identity: "target-id", options: { x: "1" }, config: CONFIG }).error.kind, IA);
  const m = call("loadTarget", { directory: "/t", identity: "target-id", options: {}, config: CONFIG }).result.model;
  const g = call("targetOpenRows", { model: m, checkpoints: [null] }).result.group;
  const p = call("targetPrefill", { group: g, tokens: { tensor: 0 } }, [ids(1, 2)]);
  assert.deepEqual(p.tensors.map((t) => t.shape), [[1, 1, V], [1, 2, H], [1, 2, H]]);
  const c = call("targetCapture", { group: g, row: 0 });
  assert.equal(c.result.checkpoint.processedTokens, 2);
  assert.match(c.result.checkpoint.digest, /^[0-9a-f]{64}$/);
  assert.deepEqual(call("targetCommit", { group: g, accepted: [0] }).error,
    { kind: IS, message: "commit: no verify round is open (spec §13.3)", poisoned: false });
});

test("the package exports the target skeleton as mtp-wire/target_rows and from mtp-wire",
  { skip: process.versions.bun ? "checks Node's resolution of package exports" : false }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), "mtp-wire-target-"));
  try {
    mkdirSync(path.join(dir, "node_modules"));
    symlinkSync(path.join(path.dirname(fileURLToPath(import.meta.url)), ".."), path.join(dir, "node_modules", "mtp-wire"), "dir");
    const probe = "const a = await import('mtp-wire/target_rows'); const b = await import('mtp-wire');"
      + "console.log(typeof a.TargetRowsSkeleton, a.TargetRowsSkeleton === b.TargetRowsSkeleton, typeof b.withTarget)";
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", probe], { cwd: dir, encoding: "utf8", timeout: 60000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), "function true function");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the README's target engine is examples/target_skeleton_backend.ts", () => {
  const pkg = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
  const file = readFileSync(path.join(pkg, "examples", "target_skeleton_backend.ts"), "utf8");
  const blocks = [...readFileSync(path.join(pkg, "README.md"), "utf8").matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.ok(blocks.includes(file), "README.md has no ts block equal to examples/target_skeleton_backend.ts");
});

// Router choices of a MoE target (WIRE.md §4 targetRouterChoices, §5.2 experts): a fake target whose "router" picks
// experts [(token + layer) % 8, (token + 2 layer + 1) % 8] in two layers; the expected replies are written out by
// hand from WIRE.md §5.2 (row, position, layer, experts per token and layer, in the order the forward pushed them).
class Routed extends Rows {
  forward(state, at, ids, s, verify) {
    const f = super.forward(state, at, ids, s, verify);
    ids.forEach((row, b) => {
      for (const layer of [0, 1]) {
        row.forEach((t, i) => this.router.push({ row: b, position: at[b] + i, layer,
          experts: [(t + layer) % 8, (t + 2 * layer + 1) % 8] }));
      }
    });
    return f;
  }
}

function routedTarget(o) {
  const drafter = { name: "t", version: "1", hello: () => ({ profiles: [], capabilities: {} }), load: () => { throw new Error("no"); } };
  let last = null;
  const engine = withTarget(drafter, { load: (a) => TargetShape.of(a.config, a.identity), rows: () => (last = new Routed()), ...o });
  const log = [];
  const server = new Server(engine, (line) => log.push(line));
  let id = 0;
  const call = (op, args = {}, tensors = []) => {
    const { reply } = server.handle({ header: { id: ++id, op, args }, tensors });
    return JSON.parse(new TextDecoder().decode(reply.subarray(0, reply.indexOf(10))));
  };
  const hello = call("hello", { protocols: ["mtp-oracle-wire/1"] }).result;
  const m = call("loadTarget", { directory: "/t", identity: "target-id", options: {}, config: CONFIG }).result.model;
  const g = call("targetOpenRows", { model: m, checkpoints: [null, null] }).result.group;
  return { hello, g, call, log, rows: () => last };
}

test("a MoE target's prefill and verify replies carry experts [[row, position, layer, e…], …]; commit and failures none", () => {
  const { hello, g, call, rows } = routedTarget({ routerChoices: true });
  assert.equal(hello.capabilities.targetRouterChoices, true);
  const p = call("targetPrefill", { group: g, tokens: { tensor: 0 } }, [i32([3, 4, 10, 11], [2, 2])]);
  assert.deepEqual(p.result.experts, [[0, 0, 0, 3, 4], [0, 1, 0, 4, 5], [0, 0, 1, 4, 6], [0, 1, 1, 5, 7],
    [1, 0, 0, 2, 3], [1, 1, 0, 3, 4], [1, 0, 1, 3, 5], [1, 1, 1, 4, 6]]);
  const v = call("targetVerify", { group: g, tokens: { tensor: 0 } }, [i32([7, 0], [2, 1])]);
  assert.deepEqual(v.result.experts, [[0, 2, 0, 7, 0], [0, 2, 1, 0, 2], [1, 2, 0, 0, 1], [1, 2, 1, 1, 3]]);
  const c = call("targetCommit", { group: g, accepted: [0, 0] });
  assert.deepEqual(c.result, {});
  assert.deepEqual(rows().routerChoices(), []);
  rows().failAt = "verify/forward";   // the engine's failure: BACKEND_FAILURE, not poisoned
  const f = call("targetVerify", { group: g, tokens: { tensor: 0 } }, [i32([1, 2], [2, 1])]);
  assert.deepEqual([f.ok, f.error.kind, f.error.poisoned, f.result], [false, "BACKEND_FAILURE", false, undefined]);
  assert.deepEqual(rows().routerChoices(), [], "a failed call reports no router choices");
  rows().failAt = "verify/publish";   // after the forward pushed its choices (in process: the wire would poison)
  assert.throws(() => rows().verify(i32([1, 2], [2, 1])), /injected at verify\/publish/);
  assert.deepEqual(rows().routerChoices(), []);
  rows().failAt = null;
  assert.equal(call("targetVerify", { group: g, tokens: { tensor: 0 } }, [i32([1, 2], [2, 1])]).result.experts.length, 4);
  assert.equal(rows().routerChoices().length, 4);
});

test("without routerChoices in withTarget's options the handshake claims nothing and replies carry no experts", () => {
  const { hello, g, call, log } = routedTarget({});
  assert.equal(hello.capabilities.targetRouterChoices, undefined);
  for (let k = 0; k < 2; k++) {
    const p = call("targetPrefill", { group: g, tokens: { tensor: 0 } }, [i32([3, 4], [2, 1])]);
    assert.equal(p.result.experts, undefined);
  }
  assert.equal(log.length, 1, log.join("\n"));   // the unclaimed routerChoices() is pointed out once
  assert.match(log[0], /targetRouterChoices/);
});

test("a malformed target router choice fails the call BACKEND_FAILURE and poisons the group", () => {
  for (const [bad, message] of [[{ row: 0, position: 0, experts: [1] }, /\[0\]\.layer is undefined/],
    [{ row: 0, position: 0, layer: -1, experts: [1] }, /\[0\]\.layer is -1/],
    [{ row: 0, position: 0, layer: 0, experts: [] }, /\[0\]\.experts is \[\]/]]) {
    const { g, call, rows } = routedTarget({ routerChoices: true });
    rows().forward = function (...a) { const f = Routed.prototype.forward.apply(this, a); this.router = [bad]; return f; };
    const r = call("targetPrefill", { group: g, tokens: { tensor: 0 } }, [i32([3, 4], [2, 1])]);
    assert.deepEqual([r.ok, r.error.kind, r.error.poisoned], [false, "BACKEND_FAILURE", true]);
    assert.match(r.error.message, /^targetPrefill: routerChoices\(\)\[0\]/);
    assert.match(r.error.message, message);
    assert.match(call("targetPrefill", { group: g, tokens: { tensor: 0 } }, [i32([3, 4], [2, 1])]).error.message, /poisoned/);
  }
});
