import { ConfigError } from "../errors.js";
import { EventGridConnector } from "../sources/eventgrid/source.js";
import type { EventGridConnectorOptions } from "../sources/eventgrid/spec.js";
import { PubSubConnector } from "../sources/pubsub/source.js";
import type { PubSubConnectorOptions } from "../sources/pubsub/spec.js";
import { SQSConnector } from "../sources/sqs/source.js";
import type { SQSConnectorOptions } from "../sources/sqs/spec.js";
import { ServiceBusConnector } from "../sources/servicebus/source.js";
import type { ServiceBusConnectorOptions } from "../sources/servicebus/spec.js";
import { WebhookSource, type WebhookOptions } from "../sources/webhook/source.js";

/*
 * The connector names of the Python package (lakelogic), for code that moves from it: the same
 * positional arguments, its option names (snake_case or camelCase) and its defaults, built on the
 * TypeScript connectors. Option names both packages share in camelCase form need no mapping (the
 * connectors accept snake_case twins themselves); unknown names are refused by the connector,
 * naming the option. docs/connectors.md#migrating-from-the-python-connectors has the table.
 */

/** A Python option name (snake_case and its camelCase spelling) → the TypeScript option, with a unit change if any. */
interface Rename {
  to: string;
  convert?: (value: unknown) => unknown;
}

interface PythonSignature {
  name: string;
  /** The Python constructor's positional parameters, as TypeScript option names. */
  positional: readonly string[];
  renames: Readonly<Record<string, Rename>>;
  /** The Python package's defaults, applied where the caller gives nothing. */
  defaults: Readonly<Record<string, unknown>>;
}

function isOptionsObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The TypeScript options of a call written the Python way: positional values first (undefined
 * or null skip one, like Python's `None`), then one options object with Python or TypeScript
 * names. Giving one option twice (positionally and by name, or under both names) is refused.
 */
export function optionsFromPython(sig: PythonSignature, args: readonly unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const from: Record<string, string> = {};
  const set = (key: string, value: unknown, given: string) => {
    if (value === undefined || value === null) return;
    if (key in out) throw new ConfigError(`${sig.name}: ${given}`, `given twice (also as ${from[key]}); give it once`);
    out[key] = value;
    from[key] = given;
  };
  let i = 0;
  for (; i < args.length && i < sig.positional.length && !isOptionsObject(args[i]); i++) {
    set(sig.positional[i]!, args[i], `argument ${i + 1} (${sig.positional[i]!})`);
  }
  const rest = args.slice(i);
  if (rest.length > 1 || (rest.length === 1 && !isOptionsObject(rest[0]) && rest[0] !== undefined)) {
    throw new ConfigError(sig.name, `expected (${sig.positional.join(", ")}, options?) with at most ${sig.positional.length} positional arguments, then one options object`);
  }
  const options = (rest[0] ?? {}) as Record<string, unknown>;
  for (const [key, value] of Object.entries(options)) {
    const rename = sig.renames[key] ?? sig.renames[camel(key)];
    if (rename) set(rename.to, rename.convert && value !== undefined && value !== null ? rename.convert(value) : value, key);
    else set(camel(key), value, key);
  }
  for (const [key, value] of Object.entries(sig.defaults)) if (!(key in out)) out[key] = value;
  return out;
}

function camel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** `maxMessages` → `max_messages`. */
type Snake<S extends string> = S extends `${infer H}${infer R}` ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${Snake<R>}` : S;

/** A connector's options, each also under its snake_case name. */
type PythonStyle<T> = Partial<T> & { [K in keyof T & string as Snake<K>]?: T[K] };

const seconds = (to: string): Rename => ({
  to,
  convert: (v) => (typeof v === "number" ? v * 1000 : v),
});

// ---------------------------------------------------------------------------------------------

/** Options under the Python names; TypeScript names are accepted too. */
export type AWSSQSConnectorOptions = PythonStyle<SQSConnectorOptions>;

export const AWS_SQS_SIGNATURE: PythonSignature = {
  name: "AWSSQSConnector",
  positional: ["queueUrl", "region", "maxMessages", "waitTimeSeconds"],
  renames: {},
  // The same as SQSConnector's: 10 messages per receive, 20 s long poll.
  defaults: { maxMessages: 10, waitTimeSeconds: 20 },
};

/**
 * `AWSSQSConnector(queue_url, region=None, max_messages=10, wait_time_seconds=20)` of the Python
 * package: an SQSConnector. Credentials: the AWS SDK default chain.
 *
 *   new AWSSQSConnector(queueUrl, { region: "eu-west-1", maxMessages: 10 })
 */
export class AWSSQSConnector extends SQSConnector {
  constructor(queueUrl: string, options?: AWSSQSConnectorOptions);
  constructor(queueUrl: string, region?: string, maxMessages?: number, waitTimeSeconds?: number);
  constructor(options: AWSSQSConnectorOptions);
  constructor(...args: unknown[]) {
    super(optionsFromPython(AWS_SQS_SIGNATURE, args) as unknown as SQSConnectorOptions);
  }
}

export type AzureEventGridConnectorOptions = PythonStyle<EventGridConnectorOptions> & {
  /** The Python name of `maxWaitTimeSeconds`. */
  wait_time_seconds?: number;
  waitTimeSeconds?: number;
};

export const AZURE_EVENT_GRID_SIGNATURE: PythonSignature = {
  name: "AzureEventGridConnector",
  positional: ["endpoint", "subscriptionName", "maxEvents", "maxWaitTimeSeconds"],
  renames: { waitTimeSeconds: { to: "maxWaitTimeSeconds" } },
  defaults: { maxEvents: 10, maxWaitTimeSeconds: 60 },
};

/**
 * `AzureEventGridConnector(endpoint, subscription_name, max_events=10, wait_time_seconds=60)` of
 * the Python package: an EventGridConnector (pull delivery). Pull delivery reads a namespace
 * topic, so `topicName` is needed as well. Credentials: `accessKey`, else DefaultAzureCredential.
 *
 *   new AzureEventGridConnector(endpoint, "lakelogic", { topicName: "orders" })
 */
export class AzureEventGridConnector extends EventGridConnector {
  constructor(endpoint: string, subscriptionName: string, options: AzureEventGridConnectorOptions);
  constructor(options: AzureEventGridConnectorOptions);
  constructor(...args: unknown[]) {
    super(optionsFromPython(AZURE_EVENT_GRID_SIGNATURE, args) as unknown as EventGridConnectorOptions);
  }
}

export type AzureServiceBusConnectorOptions = PythonStyle<ServiceBusConnectorOptions> & {
  /** Seconds, as in the Python package (TypeScript: `maxWaitTimeMs`). */
  max_wait_time?: number;
  maxWaitTime?: number;
};

export const AZURE_SERVICE_BUS_SIGNATURE: PythonSignature = {
  name: "AzureServiceBusConnector",
  positional: ["namespace", "queueName", "topicName", "subscriptionName"],
  renames: { maxWaitTime: seconds("maxWaitTimeMs") },
  defaults: { maxWaitTimeMs: 60_000 },
};

/**
 * `AzureServiceBusConnector(namespace, queue_name=None, topic_name=None, subscription_name=None,
 * max_wait_time=60)` of the Python package: a ServiceBusConnector signed in with
 * DefaultAzureCredential (or a `connectionString` instead of the namespace).
 *
 *   new AzureServiceBusConnector("myns.servicebus.windows.net", "orders")
 *   new AzureServiceBusConnector("myns", undefined, "orders", "lakelogic", { maxWaitTime: 30 })
 */
export class AzureServiceBusConnector extends ServiceBusConnector {
  constructor(namespace: string | undefined, queueName?: string, topicName?: string, subscriptionName?: string, options?: AzureServiceBusConnectorOptions);
  constructor(namespace: string, options?: AzureServiceBusConnectorOptions);
  constructor(options: AzureServiceBusConnectorOptions);
  constructor(...args: unknown[]) {
    super(optionsFromPython(AZURE_SERVICE_BUS_SIGNATURE, args));
  }
}

export type GCPPubSubConnectorOptions = PythonStyle<PubSubConnectorOptions> & {
  /** The Python name of `subscription`. */
  subscription_id?: string;
  subscriptionId?: string;
};

export const GCP_PUBSUB_SIGNATURE: PythonSignature = {
  name: "GCPPubSubConnector",
  positional: ["projectId", "subscription", "maxMessages"],
  renames: { subscriptionId: { to: "subscription" } },
  defaults: { maxMessages: 10 },
};

/**
 * `GCPPubSubConnector(project_id, subscription_id, max_messages=10)` of the Python package: a
 * PubSubConnector with at most 10 messages leased at once. Credentials: Application Default
 * Credentials.
 *
 *   new GCPPubSubConnector("my-project", "orders-sub")
 */
export class GCPPubSubConnector extends PubSubConnector {
  constructor(projectId: string, subscriptionId: string, options?: GCPPubSubConnectorOptions);
  constructor(projectId: string, subscriptionId: string, maxMessages?: number);
  constructor(options: GCPPubSubConnectorOptions);
  constructor(...args: unknown[]) {
    super(optionsFromPython(GCP_PUBSUB_SIGNATURE, args) as unknown as PubSubConnectorOptions);
  }
}

export type WebhookConnectorOptions = PythonStyle<WebhookOptions>;

export const WEBHOOK_SIGNATURE: PythonSignature = {
  name: "WebhookConnector",
  positional: ["port", "path", "host"],
  renames: {},
  // host stays 127.0.0.1 (not the Python package's 0.0.0.0): an endpoint without a signature
  // check should not face the network unless asked to.
  defaults: { port: 8080, path: "/webhook" },
};

/**
 * `WebhookConnector(port=8080, path="/webhook", host="0.0.0.0")` of the Python package: a
 * WebhookSource. It binds 127.0.0.1 unless `host` is given (e.g. `"0.0.0.0"`).
 *
 *   new WebhookConnector(8080, "/webhook", "0.0.0.0")
 */
export class WebhookConnector extends WebhookSource {
  constructor(port?: number, path?: string, host?: string, options?: WebhookConnectorOptions);
  constructor(options?: WebhookConnectorOptions);
  constructor(...args: unknown[]) {
    super(optionsFromPython(WEBHOOK_SIGNATURE, args) as unknown as WebhookOptions);
  }
}
