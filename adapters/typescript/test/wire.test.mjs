// The TypeScript SDK and the fake-block engine over a real pipe (and, at the end, router choices through the server
// loop in process): node --test adapters/typescript/test/
// (the runner's side is written here from conformance/WIRE.md; expected values are the contract's kinds and the
// lifecycle's invariants, never the engine's own output replayed).
import { spawn } from "node:child_process";
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
// the committed build by default; MTP_TS_ENGINE=examples/fake_block_backend.ts bun test ./test/ runs Bun on the source
const ENGINE = process.env.MTP_TS_ENGINE ? path.resolve(process.env.MTP_TS_ENGINE)
  : path.join(here, "..", "dist", "examples", "fake_block_backend.js");
const H = 8, NKV = 2, D = 4, V = 32;

class Client {
  constructor() {
    this.p = spawn(process.execPath, [ENGINE], { stdio: ["pipe", "pipe", "pipe"] });
    this.buf = Buffer.alloc(0);
    this.waiters = [];
    this.id = 1;
    this.p.stdout.on("data", (c) => { this.buf = Buffer.concat([this.buf, c]); this.pump(); });
  }
  pump() {
    for (;;) {
      const nl = this.buf.indexOf(10);
      if (nl < 0 || !this.waiters.length) return;
      const header = JSON.parse(this.buf.subarray(0, nl).toString("utf8"));
      const total = (header.tensors ?? []).reduce((a, t) => a + t.nbytes, 0);
      if (this.buf.length < nl + 1 + total) return;
      const tensors = [];
      let at = nl + 1;
      for (const t of header.tensors ?? []) { tensors.push({ ...t, data: this.buf.subarray(at, at + t.nbytes) }); at += t.nbytes; }
      this.buf = this.buf.subarray(at);
      this.waiters.shift()({ header, tensors });
    }
  }
  call(op, args = {}, tensors = []) {
    const header = { id: this.id++, op, args };
    if (tensors.length) header.tensors = tensors.map((t) => ({ dtype: t.dtype, shape: t.shape, nbytes: t.data.length }));
    this.p.stdin.write(Buffer.concat([Buffer.from(JSON.stringify(header) + "\n"), ...tensors.map((t) => t.data)]));
    return new Promise((resolve) => { this.waiters.push(resolve); this.pump(); });
  }
  async ok(op, args, tensors) {
    const r = await this.call(op, args, tensors);
    assert.equal(r.header.ok, true, JSON.stringify(r.header));
    return r;
  }
  async close() { await this.call("shutdown"); this.p.stdin.end(); }
}

const f32 = (values, shape) => ({ dtype: "F32", shape, data: Buffer.from(new Float32Array(values).buffer) });
const i32 = (values, shape) => ({ dtype: "I32", shape, data: Buffer.from(new Int32Array(values).buffer) });
const ctx = (b, n, seed) => f32(Array.from({ length: b * n * H }, (_, i) => Math.fround(Math.sin(seed * 7.3 + i))), [b, n, H]);
const GREEDY = { temperature: 0, topK: 0, topP: 1, seed: "0" };

async function start() {
  const c = new Client();
  const hello = await c.ok("hello", { protocols: ["mtp-oracle-wire/1"], runner: "test" });
  assert.equal(hello.header.result.protocol, "mtp-oracle-wire/1");
  const m = (await c.ok("load", { directory: "/x", layout: "hf", identity: "id-1", options: {},
    config: { hiddenSize: H, numKvHeads: NKV, headDim: D, vocabSize: V } })).header.result.model;
  return { c, m };
}

async function capture(c, g, row) {
  const r = await c.ok("capture", { group: g, row });
  return { cp: r.header.result.checkpoint, bytes: r.tensors.map((t) => Buffer.from(t.data).toString("hex")), tensors: r.tensors };
}

test("alignment: P - 1 rows after prefill, P grows by accepted + 1", async () => {
  const { c, m } = await start();
  const g = (await c.ok("openRows", { model: m, checkpoints: [null, null] })).header.result.group;
  await c.ok("prefill", { group: g, tokens: { tensor: 0 }, context: { tensor: 1 } }, [i32([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [2, 5]), ctx(2, 5, 1)]);
  assert.equal((await capture(c, g, 0)).cp.processedTokens, 5);
  const d = await c.ok("draft", { group: g, pending: [3, 4], depth: 3, steps: [1, 1], sampling: [GREEDY, GREEDY] });
  assert.equal(d.header.result.proposals.length, 2);
  assert.equal(d.header.result.proposals[0].length, 3);
  await c.ok("commit", { group: g, accepted: [1, 3], context: { tensor: 0 } }, [ctx(2, 4, 2)]);
  assert.equal((await capture(c, g, 0)).cp.processedTokens, 7);
  const r1 = await capture(c, g, 1);
  assert.equal(r1.cp.processedTokens, 9);
  assert.deepEqual(r1.tensors[0].shape, [1, NKV, 8, D]);
  await c.close();
});

test("depth 0 equals depth 1 with nothing accepted; rollback equals a prefill of the pending token", async () => {
  const { c, m } = await start();
  const g = (await c.ok("openRows", { model: m, checkpoints: [null] })).header.result.group;
  await c.ok("prefill", { group: g, tokens: { tensor: 0 }, context: { tensor: 1 } }, [i32([5, 6, 7, 8], [1, 4]), ctx(1, 4, 3)]);
  const start0 = await c.ok("capture", { group: g, row: 0 });
  const cp = { ...start0.header.result.checkpoint };
  const verify = ctx(1, 5, 4);
  const first = f32(new Float32Array(verify.data.buffer, verify.data.byteOffset, H), [1, 1, H]);
  const states = [];
  for (const [depth, width] of [[0, 1], [1, 2], [4, 5]]) {
    const h = (await c.ok("openRows", { model: m, checkpoints: [cp] }, start0.tensors)).header.result.group;
    await c.ok("draft", { group: h, pending: [9], depth, steps: [1], sampling: [GREEDY] });
    const w = f32(new Float32Array(verify.data.buffer, verify.data.byteOffset, width * H), [1, width, H]);
    await c.ok("commit", { group: h, accepted: [0], context: { tensor: 0 } }, [w]);
    states.push((await capture(c, h, 0)).bytes);
  }
  const p = (await c.ok("openRows", { model: m, checkpoints: [cp] }, start0.tensors)).header.result.group;
  await c.ok("prefill", { group: p, tokens: { tensor: 0 }, context: { tensor: 1 } }, [i32([9], [1, 1]), first]);
  states.push((await capture(c, p, 0)).bytes);
  for (const s of states.slice(1)) assert.deepEqual(s, states[0]);
  await c.close();
});

test("bad calls are refused with the contract's kinds and change nothing; a closed group refuses everything", async () => {
  const { c, m } = await start();
  const g = (await c.ok("openRows", { model: m, checkpoints: [null, null] })).header.result.group;
  await c.ok("prefill", { group: g, tokens: { tensor: 0 }, context: { tensor: 1 } }, [i32([1, 2, 3, 4], [2, 2]), ctx(2, 2, 5)]);
  const before = [await capture(c, g, 0), await capture(c, g, 1)];
  const bad = [
    ["filterRows", { keep: [0, 0] }, [], "INVALID_ARGUMENT"],
    ["filterRows", { keep: null }, [], "INVALID_ARGUMENT"],
    ["prefill", { tokens: { tensor: 0 }, context: { tensor: 1 } }, [f32([0, 0, 0, 0], [2, 2]), ctx(2, 2, 1)], "INVALID_ARGUMENT"],
    ["prefill", { tokens: { tensor: 0 }, context: { tensor: 1 } }, [i32([1, 2, 3, 4], [2, 2]), ctx(2, 3, 1)], "INVALID_ARGUMENT"],
    ["prefill", { tokens: { tensor: 0 }, context: { tensor: 1 } }, [i32([1, 2, 3, V], [2, 2]), ctx(2, 2, 1)], "INVALID_ARGUMENT"],
    ["prefill", { tokens: { tensor: 0 }, context: { tensor: 1 } }, [i32([1, 2, 3, 4], [2, 2]), f32(new Array(2 * 2 * H).fill(NaN), [2, 2, H])], "INVALID_ARGUMENT"],
    ["draft", { pending: [0, 0], depth: 65, steps: [0, 0], sampling: [GREEDY, GREEDY] }, [], "INVALID_ARGUMENT"],
    ["draft", { pending: [0, V], depth: 1, steps: [0, 0], sampling: [GREEDY, GREEDY] }, [], "INVALID_ARGUMENT"],
    ["draft", { pending: null, depth: 1, steps: [0, 0], sampling: [GREEDY, GREEDY] }, [], "INVALID_ARGUMENT"],
    ["commit", { accepted: [0, 0], context: { tensor: 0 } }, [ctx(2, 1, 1)], "ILLEGAL_STATE"],
    ["capture", { row: 2 }, [], "INVALID_ARGUMENT"],
    ["append", { checkpoints: [{ ...before[0].cp, draftOffset: 0, keys: null, values: null, hidden: null }] }, [], "INCOMPATIBLE_CHECKPOINT"],
    ["append", { checkpoints: [{ ...before[0].cp, modelIdentity: "other", keys: { tensor: 0 }, values: { tensor: 1 }, hidden: { tensor: 2 } }] }, before[0].tensors, "INCOMPATIBLE_CHECKPOINT"],
    // row 1's tensors under row 0's label and digest (the content changed), then a checkpoint without a digest
    ["append", { checkpoints: [{ ...before[0].cp, keys: { tensor: 0 }, values: { tensor: 1 }, hidden: { tensor: 2 } }] }, before[1].tensors, "INCOMPATIBLE_CHECKPOINT"],
    ["append", { checkpoints: [{ ...before[0].cp, digest: undefined, keys: { tensor: 0 }, values: { tensor: 1 }, hidden: { tensor: 2 } }] }, before[0].tensors, "INCOMPATIBLE_CHECKPOINT"],
  ];
  for (const [op, args, tensors, kind] of bad) {
    const r = await c.call(op, { group: g, ...args }, tensors);
    assert.equal(r.header.ok, false, op);
    assert.equal(r.header.error.kind, kind, `${op}: ${r.header.error.message}`);
    assert.match(r.header.error.message, new RegExp(`^${op}: `));
  }
  assert.equal((await c.ok("rowCount", { group: g })).header.result.rows, 2);
  assert.deepEqual((await capture(c, g, 0)).bytes, before[0].bytes);
  assert.deepEqual((await capture(c, g, 1)).bytes, before[1].bytes);
  await c.ok("draft", { group: g, pending: [0, 0], depth: 2, steps: [0, 0], sampling: [GREEDY, GREEDY] });
  for (const [op, args] of [["capture", { row: 0 }], ["append", { checkpoints: [null] }], ["draft", { pending: [0, 0], depth: 1, steps: [0, 0], sampling: [GREEDY, GREEDY] }]]) {
    const r = await c.call(op, { group: g, ...args });
    assert.equal(r.header.error.kind, "ILLEGAL_STATE", op);
  }
  await c.ok("close", { group: g });
  await c.ok("close", { group: g });
  for (const op of ["append", "filterRows", "prefill", "draft", "commit", "capture"]) {
    const r = await c.call(op, { group: g, checkpoints: [], keep: [], row: 0, accepted: [], pending: [], steps: [], sampling: [], depth: 1 });
    assert.equal(r.header.error.kind, "ILLEGAL_STATE", op);
    assert.ok(r.header.error.message.startsWith(`${op}: the group is closed`), r.header.error.message);
  }
  await c.close();
});

test("a checkpoint restores byte for byte and filterRows permutes rows", async () => {
  const { c, m } = await start();
  const g = (await c.ok("openRows", { model: m, checkpoints: [null, null, null] })).header.result.group;
  await c.ok("prefill", { group: g, tokens: { tensor: 0 }, context: { tensor: 1 } }, [i32([1, 2, 3, 4, 5, 6, 7, 8, 9], [3, 3]), ctx(3, 3, 6)]);
  const before = [await capture(c, g, 0), await capture(c, g, 1), await capture(c, g, 2)];
  const h = (await c.ok("openRows", { model: m, checkpoints: [{ ...before[1].cp }] }, before[1].tensors)).header.result.group;
  assert.deepEqual((await capture(c, h, 0)).bytes, before[1].bytes);
  await c.ok("filterRows", { group: g, keep: [2, 0] });
  assert.deepEqual((await capture(c, g, 0)).bytes, before[2].bytes);
  assert.deepEqual((await capture(c, g, 1)).bytes, before[0].bytes);
  await c.close();
});

test("a group whose model was unloaded refuses every call but rowCount and close; bad samplers are refused", async () => {
  const { c, m } = await start();
  const g = (await c.ok("openRows", { model: m, checkpoints: [null, null] })).header.result.group;
  await c.ok("prefill", { group: g, tokens: { tensor: 0 }, context: { tensor: 1 } }, [i32([1, 2, 3, 4], [2, 2]), ctx(2, 2, 9)]);
  for (const bad of [[GREEDY, null], [GREEDY, { temperature: 1e-39, topK: 0, topP: 1, seed: "3" }], [GREEDY, { ...GREEDY, topP: 0 }]]) {
    const r = await c.call("draft", { group: g, pending: [0, 0], depth: 1, steps: [0, 0], sampling: bad });
    assert.equal(r.header.error.kind, "INVALID_ARGUMENT", JSON.stringify(bad));
  }
  await c.ok("unload", { model: m });
  for (const op of ["append", "filterRows", "prefill", "draft", "commit", "capture"]) {
    const r = await c.call(op, { group: g, checkpoints: [], keep: [1, 0], row: 0 });
    assert.equal(r.header.error.kind, "ILLEGAL_STATE", op);
    assert.ok(r.header.error.message.startsWith(`${op}: the model this group was opened from is closed`), op);
  }
  assert.equal((await c.ok("rowCount", { group: g })).header.result.rows, 2);
  await c.ok("close", { group: g });
  await c.close();
});

test("the checkpoint digest is the encoding of spec §6 byte for byte (vectors hashed outside the code)", async () => {
  const { Tensor, checkpointDigest } = await import("../dist/src/mtp_wire.js");
  const hidden = new Tensor("F16", [1, 1, 2], Uint8Array.of(0x00, 0x3c, 0x00, 0x38));
  const keys = new Tensor("F32", [1, 1, 1, 2], Uint8Array.of(0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0));
  const values = new Tensor("BF16", [1, 1, 1, 2], Uint8Array.of(0x80, 0x3f, 0x00, 0xc0));
  assert.equal(checkpointDigest({ schema: "qwen-mtp-v1", processedTokens: 2, draftOffset: 1, modelIdentity: "abc", keys, values, hidden }),
    "c5f4a7d7c91ce0454f4f99bb349e1fb84787fa3b59e3f8fd15f0c15a57fcb220");
  assert.equal(checkpointDigest({ schema: "qwen-mtp-v1", processedTokens: 1, draftOffset: 0, modelIdentity: "abc", keys: null, values: null, hidden }),
    "ca275b0589efc1c0911fb66fe4f5ea3e9c257947d7d4812d2491a9d6fa490269");
});

// Router choices (WIRE.md §4 routerChoices, §5 experts), through the server loop in process: Server.handle answers a
// request frame with the exact bytes serve() writes. The rows stub returns what each test scripts for each call; the
// expected replies are written out by hand from WIRE.md §5.
const { Server, MtpError } = await import("../dist/src/mtp_wire.js");

function routedServer({ claim, choices }) {
  const log = [];
  const calls = { routerChoices: 0 };
  let last = null;
  const rows = {
    rowCount: () => 2,
    prefill: () => { last = choices?.prefill; },
    draft: () => { last = choices?.draft; return [[3, 4], [5, 6]]; },
    commit: () => { last = choices?.commit; },
    close: () => {},
  };
  if (choices) rows.routerChoices = () => { calls.routerChoices++; if (last instanceof Error) throw last; return last; };
  const engine = { name: "routed", version: "1",
    hello: () => ({ profiles: [], capabilities: claim ? { routerChoices: true } : {} }),
    load: () => ({ openRows: () => rows }) };
  const server = new Server(engine, (line) => log.push(line));
  let id = 0;
  const call = (op, args = {}) => {
    const { reply } = server.handle({ header: { id: ++id, op, args }, tensors: [] });
    const text = new TextDecoder().decode(reply);
    return { text, header: JSON.parse(text) };
  };
  const hello = call("hello", { protocols: ["mtp-oracle-wire/1"] }).header.result;
  const m = call("load", { directory: "/x", layout: "hf", identity: "id", options: {}, config: {} }).header.result.model;
  const g = call("openRows", { model: m, checkpoints: [null, null] }).header.result.group;
  return { hello, g, call, log, calls };
}

const SCRIPT = {
  prefill: [{ row: 0, position: 0, experts: [5, 2] }, { row: 0, position: 1, experts: Int32Array.of(7, 1) },
    { row: 1, position: 0, experts: [3, 0] }],
  draft: [{ row: 1, position: 2, experts: [6, 4] }],
  commit: [],
};

test("a handler with router choices: replies carry experts [[row, position, e_0, …], …] after the claim", () => {
  const script = { ...SCRIPT };
  const { hello, g, call, calls } = routedServer({ claim: true, choices: script });
  assert.equal(hello.capabilities.routerChoices, true);
  const id = (n) => `{"id":${n},"ok":true,"result":`;
  assert.equal(call("prefill", { group: g }).text, `${id(4)}{"experts":[[0,0,5,2],[0,1,7,1],[1,0,3,0]]}}\n`);
  assert.equal(call("draft", { group: g }).text, `${id(5)}{"proposals":[[3,4],[5,6]],"experts":[[1,2,6,4]]}}\n`);
  assert.equal(call("commit", { group: g }).text, `${id(6)}{}}\n`);       // [] (no MoE forward): nothing sent
  script.commit = [{ row: 0, position: 3, experts: [1] }, { row: 1, position: 4, experts: [2] }];
  assert.equal(call("commit", { group: g }).text, `${id(7)}{"experts":[[0,3,1],[1,4,2]]}}\n`);
  assert.equal(call("rowCount", { group: g }).text, `${id(8)}{"rows":2}}\n`);   // other ops never ask
  assert.equal(calls.routerChoices, 4);
});

test("without routerChoices, or without the claim, replies are byte for byte those of a dense engine", () => {
  const dense = `{"id":4,"ok":true,"result":{}}\n{"id":5,"ok":true,"result":{"proposals":[[3,4],[5,6]]}}\n`
    + `{"id":6,"ok":true,"result":{}}\n`;
  for (const [claim, choices] of [[false, null], [true, null], [false, SCRIPT]]) {
    const { hello, g, call, log, calls } = routedServer({ claim, choices });
    assert.equal(hello.capabilities.routerChoices, claim ? true : undefined);
    assert.equal(["prefill", "draft", "commit"].map((op) => call(op, { group: g }).text).join(""), dense);
    assert.equal(calls.routerChoices, 0, "routerChoices() is not asked for without the claim");
    assert.equal(log.length, choices && !claim ? 1 : 0, log.join("\n"));  // the unclaimed method is pointed out once
  }
});

test("a malformed or throwing routerChoices() fails the call BACKEND_FAILURE and poisons the group", () => {
  const ok = { row: 0, position: 0, experts: [1, 2] };
  const bad = [
    ["prefill", "not a list", /routerChoices\(\) returned string/],
    ["prefill", [ok, null], /routerChoices\(\)\[1\] is null/],
    ["prefill", [{ ...ok, row: -1 }], /\[0\]\.row is -1/],
    ["draft", [{ ...ok, position: 1.5 }], /\[0\]\.position is 1\.5/],
    ["draft", [{ ...ok, position: 2 ** 31 }], /\[0\]\.position is 2147483648/],
    ["commit", [{ ...ok, experts: [] }], /\[0\]\.experts is \[\], expected at least one expert/],
    ["commit", [{ ...ok, experts: undefined }], /\[0\]\.experts is undefined/],
    ["prefill", [{ ...ok, experts: [1, "2"] }], /\[0\]\.experts\[1\] is 2, expected a 32-bit integer/],
    ["prefill", [{ ...ok, experts: [1, 2 ** 31] }], /\[0\]\.experts\[1\] is 2147483648/],
    ["prefill", [{ ...ok, experts: BigInt64Array.of(1n) }], /\[0\]\.experts\[0\] is 1, expected a 32-bit integer/],
    ["draft", new Error("router state lost"), /^draft: router state lost$/],
    ["commit", new MtpError("INVALID_ARGUMENT", "not mine to say"), /^commit: not mine to say$/],
  ];
  for (const [op, returned, message] of bad) {
    const { g, call } = routedServer({ claim: true, choices: { ...SCRIPT, [op]: returned } });
    if (op === "commit") call("draft", { group: g });
    const r = call(op, { group: g }).header;
    assert.equal(r.ok, false, `${op} ${String(returned)}`);
    assert.equal(r.error.kind, "BACKEND_FAILURE", r.error.message);
    assert.equal(r.error.poisoned, true, r.error.message);
    assert.match(r.error.message, new RegExp(`^${op}: `));
    assert.match(r.error.message, message);
    const after = call("prefill", { group: g }).header;
    assert.equal(after.error.kind, "ILLEGAL_STATE", "the group is poisoned afterwards");
    assert.match(after.error.message, /poisoned/);
  }
});
