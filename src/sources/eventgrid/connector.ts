import type { SourceFactory } from "../core/registry.js";
import { EventGridConnector } from "./source.js";
import { eventgridSpec } from "./spec.js";

/** `{ "type": "eventgrid", "endpoint": "...", "topicName": "...", "subscriptionName": "..." }`. */
export const eventgridSourceFactory: SourceFactory<typeof eventgridSpec> = {
  spec: eventgridSpec,
  create: (o) => new EventGridConnector(o),
};
