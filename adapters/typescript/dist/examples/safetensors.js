// A bounds-checked safetensors reader for untrusted files (SECURITY.md): an 8-byte little-endian header length, a
// JSON header, then the data section. Every size the file claims is checked against the file's real size before
// anything is allocated for it; every failure is one line, MALFORMED_FILE. Unlike the Java reader it does not refuse
// a header that names a tensor twice: JSON.parse keeps the last entry.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { MtpError } from "../src/mtp_wire.js";
export const MAX_HEADER_BYTES = 100 * 1024 * 1024; // SECURITY.md: a safetensors header is at most 100 MiB
const SIZES = {
    F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4, U16: 2, U8: 1, BOOL: 1,
};
export const malformed = (m) => new MtpError("MALFORMED_FILE", m);
/** Every tensor of a safetensors file, by name (`__metadata__` skipped). */
export function readSafetensors(path) {
    let fd;
    try {
        fd = openSync(path, "r");
    }
    catch (e) {
        throw malformed(`load: cannot read ${path}: ${e.message.split("\n")[0]}`);
    }
    try {
        return readOpen(path, fd);
    }
    finally {
        closeSync(fd);
    }
}
function readOpen(path, fd) {
    const size = fstatSync(fd).size;
    const read = (at, n) => {
        const b = new Uint8Array(n);
        for (let got = 0; got < n;) {
            const k = readSync(fd, b, got, n - got, at + got);
            if (k <= 0)
                throw malformed(`load: ${path} ended at byte ${at + got}, ${n - got} bytes short`);
            got += k;
        }
        return b;
    };
    if (size < 8)
        throw malformed(`load: ${path} is ${size} bytes, too short for a safetensors header`);
    const n = new DataView(read(0, 8).buffer).getBigUint64(0, true);
    if (n > BigInt(Math.min(size - 8, MAX_HEADER_BYTES))) {
        throw malformed(`load: ${path} header length ${n} exceeds the file (${size} bytes) or the ${MAX_HEADER_BYTES}-byte limit`);
    }
    const base = 8 + Number(n);
    let header;
    try {
        header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(read(8, Number(n))));
    }
    catch (e) {
        throw malformed(`load: ${path} has a malformed JSON header: ${e.message.split("\n")[0]}`);
    }
    if (header === null || typeof header !== "object" || Array.isArray(header)) {
        throw malformed(`load: ${path} header is not a JSON object`);
    }
    const spans = [];
    const entries = [];
    for (const [name, info] of Object.entries(header)) {
        if (name === "__metadata__")
            continue;
        if (name.length > 1024 || /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(name)) { // names reach one-line messages
            throw malformed(`load: ${path} has a tensor name ${JSON.stringify(name.slice(0, 64))}… that is longer than 1024 characters or holds a control character`);
        }
        const { dtype, shape, data_offsets: offsets } = (info ?? {});
        const ints = (a) => Array.isArray(a) && a.every((x) => Number.isSafeInteger(x) && x >= 0);
        if (typeof dtype !== "string" || !ints(shape) || !ints(offsets) || offsets.length !== 2) {
            throw malformed(`load: ${path} tensor '${name}' has a malformed header entry`);
        }
        if (!(dtype in SIZES))
            throw malformed(`load: ${path} tensor '${name}' has unsupported dtype ${dtype.slice(0, 16)}`);
        const [begin, end] = offsets;
        const bytes = shape.reduce((a, s) => a * s, SIZES[dtype]); // exact below 2^53, and then bounded by the file
        if (!Number.isSafeInteger(bytes) || begin > end || end > size - base || end - begin !== bytes) {
            throw malformed(`load: ${path} tensor '${name}' data [${begin}, ${end}) does not hold ${dtype} [${shape.join(", ")}]`);
        }
        spans.push([begin, end, name]);
        entries.push([name, dtype, shape, begin, end]);
    }
    spans.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (let i = 1; i < spans.length; i++) {
        if (spans[i][0] < spans[i - 1][1]) {
            throw malformed(`load: ${path} tensors '${spans[i - 1][2]}' and '${spans[i][2]}' overlap`);
        }
    }
    const out = new Map();
    for (const [name, dtype, shape, begin, end] of entries)
        out.set(name, { dtype, shape, bytes: read(base + begin, end - begin) });
    return out;
}
