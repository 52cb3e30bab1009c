/**
 * The Python package's connector names: its positional arguments, option names (snake_case and
 * camelCase) and defaults map onto the TypeScript connectors; unknown options are refused by
 * name. Receiving through them against real servers is in default-credentials.test.ts (SQS,
 * Event Grid, Pub/Sub) and seed-examples.test.ts.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import * as root from "../../src/index.js";
import * as connectors from "../../src/sources/connectors.js";
import {
  AWSSQSConnector,
  AZURE_EVENT_GRID_SIGNATURE,
  AZURE_SERVICE_BUS_SIGNATURE,
  AWS_SQS_SIGNATURE,
  AzureEventGridConnector,
  AzureServiceBusConnector,
  GCPPubSubConnector,
  GCP_PUBSUB_SIGNATURE,
  WEBHOOK_SIGNATURE,
  WebhookConnector,
  optionsFromPython,
} from "../../src/python/names.js";
import { EventGridConnector } from "../../src/sources/eventgrid/source.js";
import { PubSubConnector } from "../../src/sources/pubsub/source.js";
import { SQSConnector } from "../../src/sources/sqs/source.js";
import { ServiceBusConnector } from "../../src/sources/servicebus/source.js";

/** The options a connector resolved (defaults applied): what the Python name must have changed. */
function resolved(connector: object): Record<string, unknown> {
  return (connector as { o: Record<string, unknown> }).o;
}

const QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders";
const EG = "https://ns.westeurope-1.eventgrid.azure.net";

describe("the Python connector names", () => {
  it("are exported from lakelogic and lakelogic/connectors", () => {
    for (const name of ["AWSSQSConnector", "AzureEventGridConnector", "AzureServiceBusConnector", "GCPPubSubConnector", "WebhookConnector"]) {
      expect(typeof (root as Record<string, unknown>)[name], name).toBe("function");
      expect((connectors as Record<string, unknown>)[name], name).toBe((root as Record<string, unknown>)[name]);
    }
  });

  it("AWSSQSConnector(queue_url, region, max_messages, wait_time_seconds): positional, snake_case or camelCase", () => {
    const positional = new AWSSQSConnector(QUEUE, "eu-central-1", 5, 7);
    expect(positional).toBeInstanceOf(SQSConnector);
    expect(resolved(positional)).toMatchObject({ queueUrl: QUEUE, region: "eu-central-1", maxMessages: 5, waitTimeSeconds: 7 });
    expect(resolved(new AWSSQSConnector(QUEUE, { max_messages: 3, wait_time_seconds: 1 }))).toMatchObject({ maxMessages: 3, waitTimeSeconds: 1 });
    expect(resolved(new AWSSQSConnector({ queue_url: QUEUE }))).toMatchObject({ queueUrl: QUEUE, region: "eu-west-1", maxMessages: 10, waitTimeSeconds: 20 });
    expect(resolved(new AWSSQSConnector(QUEUE, { visibility_timeout: 90 }))).toMatchObject({ visibilityTimeout: 90 });
  });

  it("AzureEventGridConnector applies the Python defaults: max_events 10, wait_time_seconds 60", () => {
    const c = new AzureEventGridConnector(EG, "lakelogic", { topicName: "orders" });
    expect(c).toBeInstanceOf(EventGridConnector);
    expect(resolved(c)).toMatchObject({ subscriptionName: "lakelogic", topicName: "orders", maxEvents: 10, maxWaitTimeSeconds: 60 });
    expect(resolved(new EventGridConnector({ endpoint: EG, topicName: "orders", subscriptionName: "s" }))).toMatchObject({ maxEvents: 100, maxWaitTimeSeconds: 10 });
    expect(resolved(new AzureEventGridConnector({ endpoint: EG, subscription_name: "s", topic_name: "t", max_events: 20, wait_time_seconds: 30 }))).toMatchObject({
      maxEvents: 20,
      maxWaitTimeSeconds: 30,
    });
    expect(() => new AzureEventGridConnector(EG, "lakelogic", {})).toThrow(/topicName.*required/);
  });

  it("AzureServiceBusConnector(namespace, queue_name, topic_name, subscription_name, max_wait_time in seconds)", () => {
    const queue = new AzureServiceBusConnector("myns.servicebus.windows.net", "orders");
    expect(queue).toBeInstanceOf(ServiceBusConnector);
    expect(resolved(queue)).toMatchObject({ namespace: "myns.servicebus.windows.net", queueName: "orders", maxWaitTimeMs: 60_000 });
    const topic = new AzureServiceBusConnector("myns", undefined, "orders", "lakelogic", { max_wait_time: 30 });
    expect(resolved(topic)).toMatchObject({ topicName: "orders", subscriptionName: "lakelogic", maxWaitTimeMs: 30_000 });
    expect(resolved(new AzureServiceBusConnector({ namespace: "myns", queue_name: "q", maxWaitTime: 2 }))).toMatchObject({ queueName: "q", maxWaitTimeMs: 2000 });
  });

  it("GCPPubSubConnector(project_id, subscription_id, max_messages=10)", () => {
    const c = new GCPPubSubConnector("my-project", "orders-sub");
    expect(c).toBeInstanceOf(PubSubConnector);
    expect(resolved(c)).toMatchObject({ projectId: "my-project", subscription: "orders-sub", maxMessages: 10 });
    expect(resolved(new GCPPubSubConnector("p", "s", 25))).toMatchObject({ maxMessages: 25 });
    expect(resolved(new GCPPubSubConnector({ project_id: "p", subscription_id: "s" }))).toMatchObject({ projectId: "p", subscription: "s" });
    expect(resolved(new PubSubConnector({ subscription: "s" }))).toMatchObject({ maxMessages: 1000 });
  });

  it("WebhookConnector(port=8080, path='/webhook', host): Python port and path, host 127.0.0.1 unless given", () => {
    expect(resolved(new WebhookConnector())).toMatchObject({ port: 8080, path: "/webhook", host: "127.0.0.1" });
    expect(resolved(new WebhookConnector(0, "/hooks", "0.0.0.0", { hmac_secret: "s3cret" }))).toMatchObject({ port: 0, path: "/hooks", host: "0.0.0.0", hmacSecret: "s3cret" });
  });

  it("refuses an unknown option by name, and an option given twice", () => {
    expect(() => new AWSSQSConnector(QUEUE, { max_msgs: 5 } as never)).toThrow(ConfigError);
    expect(() => new AWSSQSConnector(QUEUE, { max_msgs: 5 } as never)).toThrow(/maxMsgs: unknown option/);
    expect(() => new AWSSQSConnector(QUEUE, { max_mesages: 5 } as never)).toThrow(/did you mean "maxMessages"/);
    expect(() => new WebhookConnector(0, { colour: "red" } as never)).toThrow(/colour/);
    expect(() => new AWSSQSConnector(QUEUE, { queueUrl: QUEUE })).toThrow(/queueUrl: given twice/);
    expect(() => new AWSSQSConnector(QUEUE, { max_messages: 1, maxMessages: 2 })).toThrow(/maxMessages: given twice \(also as max_messages\)/);
    expect(() => new GCPPubSubConnector("p", "s", { subscription_id: "t" })).toThrow(/subscription_id: given twice/);
  });

  it("optionsFromPython: positional values stop at the options object; null skips one like None", () => {
    expect(optionsFromPython(AZURE_SERVICE_BUS_SIGNATURE, ["ns", null, "t", "s", { maxWaitTime: 1 }])).toEqual({ namespace: "ns", topicName: "t", subscriptionName: "s", maxWaitTimeMs: 1000 });
    expect(optionsFromPython(AWS_SQS_SIGNATURE, [QUEUE])).toEqual({ queueUrl: QUEUE, maxMessages: 10, waitTimeSeconds: 20 });
    expect(optionsFromPython(GCP_PUBSUB_SIGNATURE, ["p", "s"])).toEqual({ projectId: "p", subscription: "s", maxMessages: 10 });
    expect(optionsFromPython(AZURE_EVENT_GRID_SIGNATURE, [EG, "s", { waitTimeSeconds: 15 }])).toEqual({ endpoint: EG, subscriptionName: "s", maxEvents: 10, maxWaitTimeSeconds: 15 });
    expect(optionsFromPython(WEBHOOK_SIGNATURE, [])).toEqual({ port: 8080, path: "/webhook" });
    expect(() => optionsFromPython(AWS_SQS_SIGNATURE, [QUEUE, "r", 1, 2, 3])).toThrow(/at most 4 positional arguments/);
  });
});
