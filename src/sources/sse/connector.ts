import type { SourceFactory } from "../core/registry.js";
import { codeOptions } from "../core/decoders/index.js";
import { SSEOffsetSource } from "./source.js";
import { sseSpec } from "./spec.js";

/** `{ "type": "sse", "url": "...", ... }` */
export const sseSourceFactory: SourceFactory<typeof sseSpec> = {
  spec: sseSpec,
  create(o) {
    const { url, headers, ...rest } = o;
    // A JSON `headers` object goes to fetch as it is, which sends each value as text.
    return new SSEOffsetSource(url, codeOptions({ ...rest, headers: headers as Record<string, string> | undefined }));
  },
};
