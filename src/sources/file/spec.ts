import type { ComponentSpec, OptionsInput } from "../core/spec.js";

export const fileSpec = {
  type: "file",
  kind: "cursor",
  summary:
    "A file of JSON lines. The cursor is the byte offset after the last committed line; available_now stops at " +
    "the file's size when the run started, continuous follows the file as it grows. Invalid lines are quarantined.",
  options: {
    path: { type: "string", required: true, description: "Path of the JSON-lines file (relative to the process's working directory)." },
    chunkBytes: { type: "integer", min: 1024, default: 1048576, description: "Bytes read per system call." },
  },
} as const satisfies ComponentSpec;

/** The options of `new FileSource(path, ...)`: those of `fileSpec` (the path apart), and what only code can give. */
export type FileSourceOptions = Omit<OptionsInput<typeof fileSpec>, "path"> & {
  /** In continuous mode, how long to wait before looking for new lines again (doubles up to max). */
  idleBackoffMs?: { initial: number; max: number };
};
