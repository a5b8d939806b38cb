// The package's entry point ("mtp-wire"): the wire SDK (mtp_wire.ts) and the row skeleton (rows.ts).
export * from "./mtp_wire.js";
export * from "./rows.js";
