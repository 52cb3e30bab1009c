import { redactText } from "../../util/redact.js";
import type { QueueHooks } from "../core/queue.js";
import { checkQueueRetry, queueRetryOption } from "../core/queue-connector.js";
import type { ComponentSpec, OptionsInput } from "../core/spec.js";
import { TEXT_DECODE_OPTIONS, type Deserialize } from "../core/decoders/index.js";

export const sqsSpec = {
  type: "sqs",
  kind: "ack",
  summary:
    "Amazon SQS (or an SQS-compatible server) with long polling. A message is deleted only after its batch " +
    "committed (DeleteMessageBatch); visibility is extended while a batch is in flight past half the timeout; " +
    "FIFO queues keep message-group order. Poison bodies are quarantined, then deleted. Credentials come from " +
    "the AWS default chain.",
  peerDependency: "@aws-sdk/client-sqs",
  options: {
    queueUrl: { type: "string", required: true, description: "Queue URL, e.g. `https://sqs.eu-west-1.amazonaws.com/123456789012/orders`." },
    region: { type: "string", description: "AWS region. Default: the region in the queue URL, else the AWS default chain (`AWS_REGION`, profile)." },
    endpoint: { type: "string", description: "Endpoint of an SQS-compatible server (ElasticMQ, LocalStack). Default: the queue URL's host." },
    maxMessages: { type: "integer", min: 1, max: 10, default: 10, description: "Messages per ReceiveMessage call (SQS allows at most 10)." },
    waitTimeSeconds: { type: "integer", min: 0, max: 20, default: 20, description: "Long-poll cap per ReceiveMessage call; a receive waits at most the sink's remaining batch time, rounded up to whole seconds." },
    visibilityTimeout: { type: "integer", min: 1, max: 43200, default: 30, description: "Seconds a received message stays invisible; extended whenever less than half is left while its batch is in flight." },
    concurrency: { type: "integer", min: 1, max: 16, default: 4, description: "ReceiveMessage calls in parallel when a batch needs more than `maxMessages`." },
    unwrapSns: { type: "boolean", default: false, description: "Bodies are SNS notifications (not raw delivery): the record is the envelope's `Message`; topic, subject and SNS attributes go to `meta.sns`." },
    maxExtensionSeconds: { type: "integer", min: 1, default: 3600, description: "Stop extending a message's visibility after it was held this long." },
    retry: queueRetryOption,
    ...TEXT_DECODE_OPTIONS,
  },
  check: (o) => {
    const url = o.queueUrl as string;
    if (!/^https?:\/\/[^/]+\/.+/.test(url)) {
      return { option: "queueUrl", message: `expected an http(s) queue URL like https://sqs.<region>.amazonaws.com/<account>/<queue>; got ${JSON.stringify(redactText(url))}` };
    }
    if (o.endpoint !== undefined && !/^https?:\/\//.test(o.endpoint as string)) {
      return { option: "endpoint", message: `expected an http(s) URL; got ${JSON.stringify(redactText(o.endpoint as string))}` };
    }
    return checkQueueRetry(o);
  },
} as const satisfies ComponentSpec;

/** The options of `new SQSConnector(...)`: those of `sqsSpec`, and the queue hooks. */
export type SQSConnectorOptions = OptionsInput<typeof sqsSpec> & QueueHooks & { deserialize?: Deserialize };
