export * from "./mtp_wire.js";
export * from "./rows.js";
