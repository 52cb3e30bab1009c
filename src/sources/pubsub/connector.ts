import type { SourceFactory } from "../core/registry.js";
import { codeOptions } from "../core/decoders/index.js";
import { PubSubConnector } from "./source.js";
import { pubsubSpec } from "./spec.js";

/** `{ "type": "pubsub", "subscription": "...", ... }` → PubSubConnector (an ack source). */
export const pubsubSourceFactory: SourceFactory<typeof pubsubSpec> = {
  spec: pubsubSpec,
  create: (o) => new PubSubConnector(codeOptions(o)),
};
