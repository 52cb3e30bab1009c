import type { ComponentSpec, OptionsInput } from "../core/spec.js";
import { TEXT_DECODE_OPTIONS, type Deserialize } from "../core/decoders/index.js";

export const fileSpec = {
  type: "file",
  kind: "cursor",
  summary:
    "A file of JSON lines. The cursor is the byte offset after the last committed line and the file's identity " +
    "(device, inode, a digest of its first bytes), so a file rotated or replaced under the checkpoint is noticed. " +
    "available_now stops at the last complete line when the run started; continuous follows the file as it grows and " +
    "through rotation (rename or copytruncate: see Rotation). A line counts once its newline is there. Invalid lines " +
    "are quarantined, and so are lines longer than maxRecordBytes (in pieces of that size).",
  options: {
    path: { type: "string", required: true, description: "Path of the JSON-lines file (relative to the process's working directory)." },
    chunkBytes: { type: "integer", min: 1024, default: 1048576, description: "Bytes read per system call." },
    maxRecordBytes: {
      type: "integer",
      min: 1,
      default: 16777216,
      description:
        "Longest line. A longer one, finished or not, is quarantined in pieces of this many bytes (raw bytes and the reason), " +
        "so an unterminated garbage tail neither stalls the stream nor fills memory.",
    },
    ...TEXT_DECODE_OPTIONS,
  },
} as const satisfies ComponentSpec;

/** The options of `new FileSource(path, ...)`: those of `fileSpec` (the path apart), and what only code can give. */
export type FileSourceOptions = Omit<OptionsInput<typeof fileSpec>, "path" | "deserialize"> & {
  /** A line deserializer of your own (CSV, fixed width): the line's bytes, without the newline, in; the record out. */
  deserialize?: Deserialize;
  /** In continuous mode, how long to wait before looking for new lines again (doubles up to max). */
  idleBackoffMs?: { initial: number; max: number };
  /**
   * Where warnings go (an available_now run that leaves a line without its newline; a truncated file read again
   * from its beginning with no copy of its old content found; a file rotated more than once since the checkpoint).
   * Default `process.emitWarning`, code `LAKELOGIC_FILE`.
   */
  onWarning?: (message: string) => void;
};
