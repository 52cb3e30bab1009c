import { FileSource } from "./file-source.js";
import type { SourceFactory } from "../core/registry.js";
import { fileSpec } from "./spec.js";

/** `{ "type": "file", "path": "events.ndjson" }` — a JSON-lines file, replayable by byte offset. */
export const fileSourceFactory: SourceFactory<typeof fileSpec> = {
  spec: fileSpec,
  create: (o) => new FileSource(o.path, { chunkBytes: o.chunkBytes, maxRecordBytes: o.maxRecordBytes }),
};
