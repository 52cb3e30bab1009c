import type { ServiceBusReceiverLike } from "./receiver.js";
import type { QueueHooks } from "../core/queue.js";
import { checkQueueRetry, queueRetryOption } from "../core/queue-connector.js";
import type { ComponentSpec, OptionsInput } from "../core/spec.js";
import { DECODE_OPTIONS, type Deserialize } from "../core/decoders/index.js";

export const DEFAULT_DEAD_LETTER_REASON = "LakeLogic.PoisonMessage";

export const servicebusSpec = {
  type: "servicebus",
  kind: "ack",
  summary:
    "Azure Service Bus queue or topic subscription, peek-lock. A message is completed only after its batch " +
    "committed; locks are renewed while a batch is in flight; a poison message is quarantined, then " +
    "dead-lettered with LakeLogic's reason. A connection string, or DefaultAzureCredential for a namespace.",
  peerDependency: "@azure/service-bus",
  options: {
    connectionString: { type: "string", secret: true, description: "Connection string with Listen rights (`Endpoint=sb://…;SharedAccessKeyName=…;SharedAccessKey=…`). Either this or `namespace`." },
    namespace: { type: "string", description: "Namespace, `<name>` or `<name>.servicebus.windows.net`, signed in with `DefaultAzureCredential` (needs `@azure/identity`)." },
    queueName: { type: "string", description: "Queue to receive from. Either this or `topicName` + `subscriptionName`." },
    topicName: { type: "string", description: "Topic, with `subscriptionName`." },
    subscriptionName: { type: "string", description: "Subscription of `topicName`." },
    maxWaitTimeMs: { type: "integer", min: 1, default: 5000, description: "Longest wait of one receive call; a receive waits at most the sink's remaining batch time." },
    maxMessages: { type: "integer", min: 1, max: 5000, default: 100, description: "Messages asked for per receive call." },
    maxLockRenewalSeconds: { type: "integer", min: 1, default: 3600, description: "Stop renewing a message's lock after it was held this long." },
    deadLetterReason: { type: "string", default: DEFAULT_DEAD_LETTER_REASON, description: "`deadLetterReason` of poison messages; the description says why the body could not be decoded." },
    reportBacklog: { type: "boolean", default: true, description: "Report the active message count as lag through the administration API (needs Manage rights; turned off after the first refusal)." },
    retry: queueRetryOption,
    ...DECODE_OPTIONS,
  },
  check: (o) => {
    if (o.connectionString !== undefined && o.namespace !== undefined) {
      return { option: "connectionString", message: "give either connectionString or namespace, not both" };
    }
    const queue = o.queueName !== undefined;
    const topic = o.topicName !== undefined || o.subscriptionName !== undefined;
    if (queue && topic) return { option: "queueName", message: "give either queueName or topicName + subscriptionName, not both" };
    if (!queue && !topic) return { option: "queueName", message: "is required (or topicName + subscriptionName)" };
    if (topic && (o.topicName === undefined || o.subscriptionName === undefined)) {
      return { option: o.topicName === undefined ? "topicName" : "subscriptionName", message: "topicName and subscriptionName go together" };
    }
    return checkQueueRetry(o);
  },
} as const satisfies ComponentSpec;

/** The options of `new ServiceBusConnector(...)`: those of `servicebusSpec`, the queue hooks, and a receiver of your own. */
export type ServiceBusConnectorOptions = OptionsInput<typeof servicebusSpec> &
  QueueHooks & {
    /** Bring your own peek-lock receiver (code only); then no connection option is needed. */
    receiver?: ServiceBusReceiverLike;
    /** A body deserializer of your own (see DECODE_OPTIONS). */
    deserialize?: Deserialize;
  };
