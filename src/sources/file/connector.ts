import { FileSource } from "./source.js";
import type { SourceFactory } from "../core/registry.js";
import { fileSpec } from "./spec.js";
import { codeOptions } from "../core/decoders/index.js";

/** `{ "type": "file", "path": "events.ndjson" }` — a JSON-lines file, replayable by byte offset. */
export const fileSourceFactory: SourceFactory<typeof fileSpec> = {
  spec: fileSpec,
  create: (o) => new FileSource(o.path, codeOptions({ chunkBytes: o.chunkBytes, maxRecordBytes: o.maxRecordBytes, decoder: o.decoder, deserialize: o.deserialize })),
};
