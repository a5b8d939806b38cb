// The little of Node's (and Bun's) `node:fs` the example engine's model loader uses, declared here so that building
// needs no @types package (as src/runtime.d.ts does for `process`).
declare module "node:fs" {
  export function openSync(path: string, flags: "r"): number;
  export function closeSync(fd: number): void;
  export function fstatSync(fd: number): { size: number; isFile(): boolean };
  export function statSync(path: string, options: { throwIfNoEntry: false }):
    { isFile(): boolean; isDirectory(): boolean } | undefined;
  export function readSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number;
  export function readdirSync(path: string): string[];
}
