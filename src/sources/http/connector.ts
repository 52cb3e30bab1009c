import type { SourceFactory } from "../core/registry.js";
import { HttpPollSource } from "./source.js";
import { httpSpec } from "./spec.js";

/** `{ "type": "http", "url": "https://…", "recordsPath": "features", "watermark": "properties.updated" }` */
export const httpSourceFactory: SourceFactory<typeof httpSpec> = {
  spec: httpSpec,
  create(o) {
    const { url, headers, retry, ...rest } = o;
    return new HttpPollSource(url, { ...rest, headers: headers as Record<string, string> | undefined, ...(retry !== undefined ? { retry } : {}) });
  },
};
