import type { SourceFactory } from "../core/registry.js";
import { codeOptions } from "../core/decoders/index.js";
import { SQSConnector } from "./source.js";
import { sqsSpec } from "./spec.js";

/** `{ "type": "sqs", "queueUrl": "...", ... }` → SQSConnector (an ack source). */
export const sqsSourceFactory: SourceFactory<typeof sqsSpec> = {
  spec: sqsSpec,
  create: (o) => new SQSConnector(codeOptions(o)),
};
