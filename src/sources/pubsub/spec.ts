import type { QueueHooks } from "../core/queue.js";
import { checkQueueRetry, queueRetryOption } from "../core/queue-connector.js";
import type { ComponentSpec, OptionsInput } from "../core/spec.js";
import { DECODE_OPTIONS, type Deserialize } from "../core/decoders/index.js";

export const pubsubSpec = {
  type: "pubsub",
  kind: "ack",
  summary:
    "Google Cloud Pub/Sub, streaming pull with flow control. A message is acknowledged only after its batch " +
    "committed; the client extends ack deadlines while a batch is in flight; ordering keys are respected and " +
    "attributes kept. Poison data is quarantined, then acknowledged. Credentials from ADC; `PUBSUB_EMULATOR_HOST` " +
    "is honoured.",
  peerDependency: "@google-cloud/pubsub",
  options: {
    projectId: { type: "string", description: "Google Cloud project. Default: the project in a full subscription name, else ADC (`GOOGLE_CLOUD_PROJECT`, the credentials' project)." },
    subscription: { type: "string", required: true, description: "Subscription name, or `projects/<project>/subscriptions/<name>`." },
    maxMessages: { type: "integer", min: 1, default: 1000, description: "Flow control: most messages leased at once (buffered plus the batch being written); the stream pauses beyond it." },
    maxBytes: { type: "integer", min: 1024, default: 104857600, description: "Flow control: most message bytes leased at once." },
    ackDeadlineSeconds: { type: "integer", min: 1, max: 600, description: "Fixed ack deadline the client asks for and renews (the service accepts 10–600). Default: adaptive, 10 s up to the 99th percentile of ack times." },
    maxExtensionMinutes: { type: "number", min: 0.1, default: 60, description: "Stop extending a message's ack deadline after it was held this long." },
    apiEndpoint: { type: "string", description: "API endpoint `host:port`. Default: Google's, or `PUBSUB_EMULATOR_HOST` when set." },
    streams: { type: "integer", min: 1, max: 64, default: 5, description: "Streaming pull connections opened in parallel." },
    retry: queueRetryOption,
    ...DECODE_OPTIONS,
  },
  check: (o) => {
    const sub = o.subscription as string;
    if (sub.includes("/") && !/^projects\/[^/]+\/subscriptions\/[^/]+$/.test(sub)) {
      return { option: "subscription", message: `expected a name or projects/<project>/subscriptions/<name>; got ${JSON.stringify(sub)}` };
    }
    return checkQueueRetry(o);
  },
} as const satisfies ComponentSpec;

/** The options of `new PubSubConnector(...)`: those of `pubsubSpec`, and the queue hooks. */
export type PubSubConnectorOptions = OptionsInput<typeof pubsubSpec> & QueueHooks & { deserialize?: Deserialize };
