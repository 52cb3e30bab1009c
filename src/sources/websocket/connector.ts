import type { SourceFactory } from "../core/registry.js";
import { codeOptions } from "../core/decoders/index.js";
import { WebSocketSource } from "./source.js";
import { websocketSpec } from "./spec.js";

/** `{ "type": "websocket", "url": "wss://...", "subscribeMessage": {...} }` */
export const websocketSourceFactory: SourceFactory<typeof websocketSpec> = {
  spec: websocketSpec,
  create(o) {
    const { url, headers, subscribeMessages, ...rest } = o;
    return new WebSocketSource(url, codeOptions({
      ...rest,
      // A JSON `headers` object goes to the handshake as it is, which sends each value as text.
      headers: headers as Record<string, string> | undefined,
      // websocketSpec.check accepts only a list here.
      subscribeMessages: Array.isArray(subscribeMessages) ? subscribeMessages : undefined,
    }));
  },
};
