import { MtpError } from "../src/mtp_wire.js";
export declare const MAX_HEADER_BYTES: number;
/** One stored tensor: its dtype, shape and little-endian row-major bytes. */
export interface StoredTensor {
    dtype: string;
    shape: number[];
    bytes: Uint8Array;
}
export declare const malformed: (m: string) => MtpError;
/** Every tensor of a safetensors file, by name (`__metadata__` skipped). */
export declare function readSafetensors(path: string): Map<string, StoredTensor>;
