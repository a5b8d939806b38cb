// The little of Node's (and Bun's) `process` global the SDK uses, declared here so that building needs no @types
// package: the SDK has no dependencies, not even type-only ones.
declare const process: {
  stdin: {
    isTTY?: boolean;
    on(event: "data", cb: (chunk: Uint8Array) => void): void;
    on(event: "end", cb: () => void): void;
  };
  stdout: { write(data: Uint8Array, cb?: () => void): boolean };
  stderr: { write(data: string): boolean };
  exit(code: number): never;
};
declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean });
  decode(bytes: Uint8Array): string;
}
declare class TextEncoder {
  encode(text: string): Uint8Array;
}
declare const console: {
  log(...xs: unknown[]): void;
  info(...xs: unknown[]): void;
  debug(...xs: unknown[]): void;
  error(...xs: unknown[]): void;
};
declare module "node:crypto" {
  export function createHash(algorithm: "sha256"): {
    update(data: Uint8Array): void;
    digest(encoding: "hex"): string;
  };
}
