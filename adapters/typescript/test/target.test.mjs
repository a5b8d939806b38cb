// The target ops (WIRE.md §5.2-5.3) through the TypeScript SDK's server loop in process: handles, the three output
// tensors of a forward, the captured checkpoint with its digest, poisoning, an unloaded target, and an engine without
// the capability. Expected replies and the digest's bytes are written out by hand from WIRE.md, not replayed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";

const { Server, Tensor, MtpError, targetCheckpointDigest } = await import("../dist/src/mtp_wire.js");

const f32 = (values, shape) => new Tensor("F32", shape, new Uint8Array(Float32Array.from(values).buffer));

function targetServer({ withTarget = true, rows = {} } = {}) {
  const log = [];
  const state = { processed: [0, 0], closed: 0 };
  const group = {
    processedTokens: () => state.processed,
    append: () => {},
    filterRows: () => {},
    prefill: () => ({ logits: f32([1, 2], [2, 1, 1]), preNorm: f32([3, 4], [2, 1, 1]), postNorm: f32([5, 6], [2, 1, 1]) }),
    verify: () => { throw new Error("device lost"); },
    commit: () => {},
    capture: () => ({ schema: "qwen-target-v1", processedTokens: 1, modelIdentity: "id", convWindows: f32([0.5], [1, 1, 1]),
      recurrentStates: null, keys: null, values: null }),
    close: () => { state.closed++; },
    ...rows,
  };
  const engine = { name: "toy", version: "1", hello: () => ({ profiles: [], capabilities: { target: withTarget } }),
    load: () => ({ openRows: () => ({}) }) };
  if (withTarget) engine.loadTarget = () => ({ numerics: "toy f32", openRows: () => group });
  const server = new Server(engine, (line) => log.push(line));
  let id = 0;
  const call = (op, args = {}) => {
    const { reply } = server.handle({ header: { id: ++id, op, args }, tensors: [] });
    const nl = reply.indexOf(10);
    const header = JSON.parse(new TextDecoder().decode(reply.subarray(0, nl)));
    return { header, payload: reply.subarray(nl + 1) };
  };
  call("hello", { protocols: ["mtp-oracle-wire/1"] });
  return { call, state, log };
}

test("loadTarget, targetOpenRows and a prefill reply with logits, preNorm and postNorm tensors in that order", () => {
  const { call } = targetServer();
  const load = call("loadTarget", { directory: "/t", layout: "qwen3_5", identity: "id", options: {}, config: {} }).header;
  assert.deepEqual(load.result, { model: 1, numerics: "toy f32" });
  const g = call("targetOpenRows", { model: 1, checkpoints: [null, null] }).header.result.group;
  assert.equal(g, 2, "handles share the server's counter");
  const { header, payload } = call("targetPrefill", { group: g, tokens: null });
  assert.deepEqual(header.result, { logits: { tensor: 0 }, preNorm: { tensor: 1 }, postNorm: { tensor: 2 } });
  assert.deepEqual(header.tensors, [0, 1, 2].map(() => ({ dtype: "F32", shape: [2, 1, 1], nbytes: 8 })));
  assert.deepEqual([...new Float32Array(payload.slice().buffer)], [1, 2, 3, 4, 5, 6]);
  assert.deepEqual(call("targetProcessed", { group: g }).header.result, { processed: [0, 0] });
});

test("targetCapture sends the checkpoint with the digest of WIRE.md §5.3, computed byte by byte here", () => {
  const { call } = targetServer();
  call("loadTarget", { directory: "/t" });
  const g = call("targetOpenRows", { model: 1, checkpoints: [] }).header.result.group;
  const { header } = call("targetCapture", { group: g, row: 0 });
  const cp = header.result.checkpoint;
  assert.equal(cp.convWindows.tensor, 0);
  assert.equal(cp.recurrentStates, null);
  const h = createHash("sha256");
  const le = (n, bytes) => { const b = Buffer.alloc(bytes); bytes === 4 ? b.writeUInt32LE(n) : b.writeBigInt64LE(BigInt(n)); return b; };
  const text = (s) => { h.update(le(Buffer.byteLength(s), 4)); h.update(s); };
  h.update("mtp-oracle-target-checkpoint-digest/1");
  text("qwen-target-v1"); h.update(le(1, 8)); text("id");
  h.update(Buffer.from([1])); text("F32"); h.update(le(3, 4)); [1, 1, 1].forEach((d) => h.update(le(d, 8)));
  h.update(le(4, 8)); h.update(Buffer.from(Float32Array.of(0.5).buffer));
  h.update(Buffer.from([0, 0, 0]));
  assert.equal(cp.digest, h.digest("hex"));
  assert.equal(targetCheckpointDigest({ schema: "qwen-target-v1", processedTokens: 1, modelIdentity: "id",
    convWindows: f32([0.5], [1, 1, 1]), recurrentStates: null, keys: null, values: null }), cp.digest);
});

test("a handler that throws poisons the group; an unloaded target's groups answer ILLEGAL_STATE", () => {
  const { call, state } = targetServer();
  call("loadTarget", { directory: "/t" });
  const g = call("targetOpenRows", { model: 1, checkpoints: [] }).header.result.group;
  const v = call("targetVerify", { group: g, tokens: null }).header;
  assert.equal(v.error.kind, "BACKEND_FAILURE");
  assert.equal(v.error.poisoned, true);
  assert.match(call("targetCommit", { group: g, accepted: [0] }).header.error.message, /poisoned/);
  assert.equal(call("targetClose", { group: g }).header.ok, true);
  assert.equal(state.closed, 1);
  const g2 = call("targetOpenRows", { model: 1, checkpoints: [] }).header.result.group;
  call("targetUnload", { model: 1 });
  const after = call("targetPrefill", { group: g2, tokens: null }).header;
  assert.equal(after.error.kind, "ILLEGAL_STATE");
  assert.match(after.error.message, /target this group was opened from is closed/);
  assert.equal(call("targetProcessed", { group: g2 }).header.ok, true, "targetProcessed still answers");
  assert.equal(call("targetCommit", { group: 99, accepted: [] }).header.error.kind, "INVALID_ARGUMENT");
});

test("an engine without loadTarget answers UNAVAILABLE; a handler's MtpError passes through with its kind", () => {
  assert.equal(targetServer({ withTarget: false }).call("loadTarget", { directory: "/t" }).header.error.kind,
    "UNAVAILABLE");
  const { call } = targetServer({ rows: { commit: () => { throw new MtpError("ILLEGAL_STATE", "commit: no round"); } } });
  call("loadTarget", { directory: "/t" });
  const g = call("targetOpenRows", { model: 1, checkpoints: [] }).header.result.group;
  const r = call("targetCommit", { group: g, accepted: [0] }).header;
  assert.deepEqual(r.error, { kind: "ILLEGAL_STATE", message: "commit: no round", poisoned: false });
  assert.equal(call("targetProcessed", { group: g }).header.ok, true, "not poisoned");
});
