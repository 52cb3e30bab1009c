import type { SourceFactory } from "../core/registry.js";
import { codeOptions } from "../core/decoders/index.js";
import { ServiceBusConnector } from "./source.js";
import { servicebusSpec } from "./spec.js";

/** `{ "type": "servicebus", "connectionString" | "namespace", "queueName" | "topicName" + "subscriptionName" }`. */
export const servicebusSourceFactory: SourceFactory<typeof servicebusSpec> = {
  spec: servicebusSpec,
  create: (o) => new ServiceBusConnector(codeOptions(o)),
};
