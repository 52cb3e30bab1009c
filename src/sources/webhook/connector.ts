import type { SourceFactory } from "../core/registry.js";
import { WebhookSource } from "./source.js";
import { eventGridPushSpec, webhookSpec } from "./spec.js";

/** `{ "type": "webhook", "port": 8080, ... }` */
export const webhookSourceFactory: SourceFactory<typeof webhookSpec> = {
  spec: webhookSpec,
  create: (o) => new WebhookSource(o),
};

/** `{ "type": "eventgrid-push", ... }`: the same endpoint, named for Event Grid push delivery. */
export const eventGridPushSourceFactory: SourceFactory<typeof eventGridPushSpec> = {
  spec: eventGridPushSpec,
  create: (o) => new WebhookSource(o),
};
