export * from "./mtp_wire.js";
export * from "./rows.js";
export * from "./target_rows.js";
