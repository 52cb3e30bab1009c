import type { SourceFactory } from "../core/registry.js";
import { EventGridConnector } from "./source.js";
import { eventgridSpec } from "./spec.js";

// The connector and its options are also reached from here, as before the source moved to source.ts.
export { EventGridConnector } from "./source.js";
export type { EventGridConnectorOptions } from "./spec.js";

/** `{ "type": "eventgrid", "endpoint": "...", "topicName": "...", "subscriptionName": "..." }`. */
export const eventgridSourceFactory: SourceFactory<typeof eventgridSpec> = {
  spec: eventgridSpec,
  create: (o) => new EventGridConnector(o),
};
