import type { SourceFactory } from "../core/registry.js";
import { codeOptions } from "../core/decoders/index.js";
import { PubSubConnector } from "./source.js";
import { pubsubSpec } from "./spec.js";

// The connector and its options are also reached from here, as before the source moved to source.ts.
export { PubSubConnector } from "./source.js";
export type { PubSubConnectorOptions } from "./spec.js";

/** `{ "type": "pubsub", "subscription": "...", ... }` → PubSubConnector (an ack source). */
export const pubsubSourceFactory: SourceFactory<typeof pubsubSpec> = {
  spec: pubsubSpec,
  create: (o) => new PubSubConnector(codeOptions(o)),
};
