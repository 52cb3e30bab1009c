import { redactText, secretsOfUrl } from "../../util/redact.js";
import type { QueueHooks } from "../core/queue.js";
import { checkQueueRetry, queueRetryOption } from "../core/queue-connector.js";
import type { ComponentSpec, OptionsInput } from "../core/spec.js";

export const eventgridSpec = {
  type: "eventgrid",
  kind: "ack",
  summary:
    "Azure Event Grid namespace topic subscription, pull delivery (CloudEvents). An event is acknowledged by " +
    "its lock token only after its batch committed, released on failure, rejected when poison; locks are " +
    "renewed while a batch is in flight. An access key, or DefaultAzureCredential.",
  peerDependency: "@azure/eventgrid-namespaces",
  options: {
    endpoint: { type: "string", required: true, description: "Namespace endpoint, e.g. `https://<namespace>.<region>-1.eventgrid.azure.net`." },
    topicName: { type: "string", required: true, description: "Namespace topic." },
    subscriptionName: { type: "string", required: true, description: "Event subscription of the topic, with delivery mode *queue* (pull)." },
    maxEvents: { type: "integer", min: 1, max: 100, default: 100, description: "Events per receive call (the service allows 1–100)." },
    maxWaitTimeSeconds: { type: "integer", min: 10, max: 120, default: 10, description: "Long-poll of one receive call (the service allows 10–120 s). A receive returns after the sink's batch time even while the poll goes on; events it brings are kept, locked, for the next one." },
    accessKey: { type: "string", secret: true, description: "Namespace access key. Default: `DefaultAzureCredential` (needs `@azure/identity`)." },
    lockDurationSeconds: { type: "integer", min: 1, max: 300, default: 60, description: "The subscription's receive lock duration; locks are renewed when half of it is left." },
    maxLockRenewalSeconds: { type: "integer", min: 1, default: 3600, description: "Stop renewing an event's lock after it was held this long." },
    unwrapData: { type: "boolean", default: true, description: "The record is the CloudEvent's `data` (envelope fields go to `meta`); false makes it the whole event." },
    retry: queueRetryOption,
  },
  check: (o) => {
    const endpoint = o.endpoint as string;
    // The endpoint as messages show it: a SAS signature or the key may travel in it.
    const shown = redactText(endpoint, [...secretsOfUrl(endpoint), ...(typeof o.accessKey === "string" ? [o.accessKey] : [])]);
    if (!/^https?:\/\/[^/]+/.test(endpoint)) {
      return { option: "endpoint", message: `expected an https URL like https://<namespace>.<region>-1.eventgrid.azure.net; got ${JSON.stringify(shown)}` };
    }
    // Plain http only to this machine (a local test server): a key must not cross a network in clear.
    if (endpoint.startsWith("http://") && !isLoopback(endpoint)) {
      return { option: "endpoint", message: `expected https (plain http is accepted only for 127.0.0.1, localhost or [::1]); got ${JSON.stringify(shown)}` };
    }
    return checkQueueRetry(o);
  },
} as const satisfies ComponentSpec;

/** The options of `new EventGridConnector(...)`: those of `eventgridSpec`, and the queue hooks. */
export type EventGridConnectorOptions = OptionsInput<typeof eventgridSpec> & QueueHooks;

function isLoopback(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
  } catch {
    return false;
  }
}
