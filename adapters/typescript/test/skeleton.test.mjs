// The row skeleton (src/rows.ts): the Java RowContract's kinds and messages (copied here from RowContract.java and
// AbstractDraftRows.java, not from rows.ts), a failure at any step of any call changes nothing, and the README's
// snippets run as written: my_engine.mjs installed the npm way passes wire.test.mjs's lifecycle suite over a pipe, and
// the README's TypeScript adapter is examples/skeleton_backend.ts itself. node --test adapters/typescript/test/
import { spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { MtpError, Tensor, checkpointDigest } from "../dist/src/mtp_wire.js";
import { RowShape, RowsSkeleton } from "../dist/src/rows.js";
import { FakeBlock, RowKv } from "../dist/examples/fake_block.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.join(here, "..");
const H = 8, NKV = 2, D = 4, V = 32;
const GREEDY = { temperature: 0, topK: 0, topP: 1, seed: 0n };

/** The fake block (examples/fake_block.ts) on the skeleton, storage as examples/skeleton_backend.ts keeps it, with a
 * fault hook. */
class Rows extends RowsSkeleton {
  constructor() { super(new RowShape("id-1", V, H, NKV, D), []); this.block = new FakeBlock(this.shape); this.failAt = null; }
  appendRows(state, restored) {
    return state.concat(restored.map((r) => ({ kv: RowKv.restore(r?.keys ?? null, r?.values ?? null, this.shape), hidden: r?.hidden ?? null })));
  }
  forward(state, at, rows, ids, hin) {
    return [state, state.map((row, b) => {
      if (rows && !rows[b]) return null;
      row.kv.length = at[b];
      const out = new Float64Array(ids[b].length * H);
      ids[b].forEach((t, i) => out.set(this.block.forward(row.kv, t, hin ? hin[b].subarray(i * H, (i + 1) * H) : row.hidden), i * H));
      return out;
    })];
  }
  retain(state, hidden) { return state.map((row, b) => ({ kv: row.kv, hidden: hidden[b] })); }
  sample(_row, y) { return this.block.argmax(y); }
  export(state, row, length) {
    state[row].kv.length = length;
    return { keys: state[row].kv.export("keys", this.shape), values: state[row].kv.export("values", this.shape), hidden: state[row].hidden };
  }
  reached(call, step) { if (this.failAt === `${call}/${step}`) throw new Error(`injected at ${call}/${step}`); }
}

const f32 = (values, shape) => Tensor.f32(values, shape);
const i32 = (values, shape) => Tensor.i32(values, shape);
const ctx = (b, n, seed) => f32(Array.from({ length: b * n * H }, (_, i) => Math.sin(seed * 7.3 + i)), [b, n, H]);
const ids = (b, n) => i32(Array.from({ length: b * n }, (_, i) => (i * 5 + 1) % V), [b, n]);

/** What a runner observes of a group: its rows, and each row's checkpoint digest or refusal kind. */
function observe(g) {
  const out = [g.rowCount(), g.drafterLengths().join(",")];
  for (let r = 0; r < g.rowCount(); r++) {
    try { out.push(g.capture(r).digest); } catch (e) { out.push(e.kind); }
  }
  return out.join(" ");
}

function prefilled(rows = 2) {
  const g = new Rows();
  g.append(Array(rows).fill(null));
  g.prefill(ids(rows, 3), ctx(rows, 3, 1));
  return g;
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

test("bad calls: RowContract's kinds and messages, rows unchanged", () => {
  const g = prefilled();
  const IA = "INVALID_ARGUMENT", IS = "ILLEGAL_STATE", IC = "INCOMPATIBLE_CHECKPOINT";
  refuses(g, () => g.append(null), IA, "append: checkpoint list is null (use null entries for cold rows)");
  refuses(g, () => g.filterRows([0, 0]), IA, "filterRows: keep[1] = 0 repeats a row");
  refuses(g, () => g.prefill(null, ctx(2, 2, 1)), IA, "prefill: tokens is null");
  refuses(g, () => g.prefill(f32([0, 0, 0, 0], [2, 2]), ctx(2, 2, 1)), IA, "prefill: tokens dtype F32, expected I32 or I64");
  refuses(g, () => g.prefill(i32([], [2, 0]), ctx(2, 0, 1)), IA, "prefill: tokens has L = 0 new positions, expected L ≥ 1 (spec §5.4)");
  const wraps = new Tensor("I64", [2, 1], new Uint8Array(new BigInt64Array([1n, (1n << 32n) + 1n]).buffer));
  refuses(g, () => g.prefill(wraps, ctx(2, 1, 1)), IA, `prefill: tokens[1, 0] = 4294967297 outside the vocabulary [0, ${V})`);
  const nan = Array(2 * 2 * H).fill(0);
  nan[(1 * 2 + 1) * H + 3] = NaN;
  refuses(g, () => g.prefill(ids(2, 2), f32(nan, [2, 2, H])), IA, "prefill: context[1, 1, 3] (row 1, position 1) = NaN is not finite");
  refuses(g, () => g.prefill(ids(2, 2), ctx(2, 3, 1)), IA,
    `prefill: context shape F32[2, 3, ${H}], expected [2, 2, ${H}] (the taps at the same L positions as tokens)`);
  refuses(g, () => g.draft([0], 1, [0, 0], [GREEDY, GREEDY]), IA, "draft: pending has 1 entries, expected 2 (one per row)");
  refuses(g, () => g.draft([0, 0], 65, [0, 0], [GREEDY, GREEDY]), IA, "draft: depth = 65 outside [0, 64]");
  refuses(g, () => g.draft([0, 0], 1, [0, -1], [GREEDY, GREEDY]), IA, "draft: steps[1] = -1 is negative");
  refuses(g, () => g.draft([0, 0], 1, [0, 0], [GREEDY]), IA, "draft: sampling has 1 row samplers, expected 2");
  refuses(g, () => g.commit([0, 0], ctx(2, 2, 1)), IS, "commit: no draft round is open (spec §5.8)");
  refuses(g, () => g.capture(2), IA, "capture: row 2 outside [0, 2)");
  g.draft([0, 0], 2, [0, 0], [GREEDY, GREEDY]);
  refuses(g, () => g.append([null]), IS, "append: a draft round is open; commit it first (spec §9.2)");
  refuses(g, () => g.commit([0, 3], ctx(2, 3, 1)), IA, "commit: accepted[1] = 3 outside [0, 2], the draft depth (spec §5.8); rows unchanged");
  g.commit([2, 0], ctx(2, 3, 2));
  const cold = new Rows();
  cold.append([null]);
  refuses(cold, () => cold.draft([0], 1, [0], [GREEDY]), IS, "draft: row 0 has no retained hidden (a cold row must be prefilled first, spec §5.7)");
  refuses(cold, () => cold.capture(0), IS, "capture: row 0 has consumed no target token yet (a cold row must be prefilled first, spec §11.1)");
  const cp = g.capture(0);
  const where = "append: checkpoint[1]";
  const edit = (o) => ({ ...cp, ...o });
  refuses(g, () => g.append([null, edit({ schema: "qwen-mtp-v0" })]), IC, `${where} has schema 'qwen-mtp-v0', expected 'qwen-mtp-v1' (spec §6)`);
  refuses(g, () => g.append([null, edit({ modelIdentity: "another-model-id" })]), IC, `${where} belongs to model another-mode…, this group's model is id-1`);
  refuses(g, () => g.append([null, edit({ values: null })]), IC, `${where} has no values tensor`);
  refuses(g, () => g.append([null, edit({ digest: undefined })]), IC,
    `${where} carries no content digest; a checkpoint comes from a capture, or from a file or peer that kept its digest (spec §6)`);
  refuses(g, () => g.append([null, edit({ hidden: f32(Array(H).fill(1), [1, 1, H]) })]), IC,
    `${where} does not match its content digest: its label (schema, P, draftOffset, model identity) or its tensors were changed after capture (spec §6)`);
  assert.equal(cp.digest, checkpointDigest({ ...cp, digest: undefined }));
  g.append([null, cp]);
  assert.equal(g.capture(3).digest, cp.digest);
  g.close();
  refuses(g, () => g.filterRows([]), IS, "filterRows: the group is closed");
});

test("a failure at any step of any call changes nothing, and the call then succeeds as on a group that never failed", () => {
  const calls = {
    append: (g) => g.append([null]), filterRows: (g) => g.filterRows([1, 0]), prefill: (g) => g.prefill(ids(2, 4), ctx(2, 4, 3)),
    draft: (g) => g.draft([1, 2], 2, [0, 0], [GREEDY, GREEDY]), commit: (g) => g.commit([2, 1], ctx(2, 3, 4)),
  };
  const steps = ["append/publish", "filterRows/publish", "prefill/bridge forward", "prefill/chunk forward", "prefill/retain hidden",
    "prefill/publish", "draft/publish", "commit/full-acceptance forward", "commit/retain hidden", "commit/publish"];
  for (const at of steps) {
    const call = at.split("/")[0];
    const g = prefilled();
    const ref = prefilled();
    if (call === "commit") for (const x of [g, ref]) calls.draft(x);
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
    assert.equal(observe(g), observe(ref), at);
  }
});

function readmeBlock(lang, first) {
  const text = readFileSync(path.join(pkg, "README.md"), "utf8");
  for (const m of text.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))) if (m[1].startsWith(first)) return m[1];
  throw new Error(`README.md has no ${lang} block starting with ${first}`);
}

test("the README's adapter is examples/skeleton_backend.ts", () => {
  assert.equal(readmeBlock("ts", "// The MTP block (mtp_block.ts"), readFileSync(path.join(pkg, "examples", "skeleton_backend.ts"), "utf8"));
});

test("the README's my_engine.mjs, with mtp-wire installed the npm way, passes the lifecycle suite over a pipe",
  { skip: process.versions.bun ? "runs wire.test.mjs with node --test" : false }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), "mtp-wire-readme-"));
  try {
    mkdirSync(path.join(dir, "node_modules"));
    symlinkSync(pkg, path.join(dir, "node_modules", "mtp-wire"), "dir"); // what `npm install <folder>` makes
    writeFileSync(path.join(dir, "my_engine.mjs"), readmeBlock("js", "// my_engine.mjs"));
    const env = { ...process.env, MTP_TS_ENGINE: path.join(dir, "my_engine.mjs") };
    delete env.NODE_TEST_CONTEXT; // a test run of its own, reporting on stdout
    const r = spawnSync(process.execPath, ["--test", "--test-reporter=tap", path.join(here, "wire.test.mjs")],
      { cwd: dir, encoding: "utf8", env, timeout: 120000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /# fail 0/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
