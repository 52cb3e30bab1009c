import type { SourceFactory } from "../core/registry.js";
import { codeOptions } from "../core/decoders/index.js";
import { SQSConnector } from "./source.js";
import { sqsSpec } from "./spec.js";

// The connector and its options are also reached from here, as before the source moved to source.ts.
export { SQSConnector } from "./source.js";
export type { SQSConnectorOptions } from "./spec.js";

/** `{ "type": "sqs", "queueUrl": "...", ... }` → SQSConnector (an ack source). */
export const sqsSourceFactory: SourceFactory<typeof sqsSpec> = {
  spec: sqsSpec,
  create: (o) => new SQSConnector(codeOptions(o)),
};
