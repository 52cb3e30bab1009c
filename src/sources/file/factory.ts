import { FileSource } from "./file-source.js";
import type { SourceFactory } from "../core/registry.js";

/** `{ "type": "file", "path": "events.ndjson" }` — a JSON-lines file, replayable by byte offset. */
export const fileSourceFactory: SourceFactory = {
  spec: {
    type: "file",
    kind: "cursor",
    summary:
      "A file of JSON lines. The cursor is the byte offset after the last committed line; available_now stops at " +
      "the file's size when the run started, continuous follows the file as it grows. Invalid lines are quarantined.",
    options: {
      path: { type: "string", required: true, description: "Path of the JSON-lines file (relative to the process's working directory)." },
      chunkBytes: { type: "integer", min: 1024, default: 1048576, description: "Bytes read per system call." },
    },
  },
  create: (o) => new FileSource(o.path as string, { chunkBytes: o.chunkBytes as number }),
};

