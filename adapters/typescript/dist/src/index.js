// The package's entry point ("mtp-wire"): the wire SDK (mtp_wire.ts), the row skeleton (rows.ts) and the target row
// skeleton (target_rows.ts).
export * from "./mtp_wire.js";
export * from "./rows.js";
export * from "./target_rows.js";
