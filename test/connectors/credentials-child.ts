/**
 * A process with a chosen environment that builds one cloud connector under its Python name with
 * no credential option, asks it for messages once, and prints `{"ok":true,"n":…}` or
 * `{"ok":false,"error":"…"}` on its last line. The test decides what the environment holds.
 *
 * argv: <sqs|pubsub|eventgrid> <address> [extra]
 *   sqs:       queue URL
 *   pubsub:    project id, subscription id (apiEndpoint from PUBSUB_TEST_ENDPOINT; GOOGLEAPIS_AT)
 *   eventgrid: endpoint, topic (subscription "lakelogic")
 */
import dns from "node:dns";
import { AWSSQSConnector, AzureEventGridConnector, GCPPubSubConnector } from "../../src/python/names.js";

// GOOGLEAPIS_AT: the Pub/Sub client talks to Google (TLS, credentials) only for *.googleapis.com
// hosts — any other apiEndpoint is taken for an emulator — so those names resolve to this machine.
const googleapisAt = process.env.GOOGLEAPIS_AT;
if (googleapisAt) {
  const lookup = dns.promises.lookup.bind(dns.promises);
  (dns.promises as { lookup: unknown }).lookup = (host: string, options: dns.LookupOptions) =>
    host.endsWith(".googleapis.com") ? Promise.resolve([{ address: googleapisAt, family: 4 }]) : lookup(host, options);
}

const [kind, address, extra] = process.argv.slice(2);
const quiet = { onWarning: () => undefined, retry: { maxAttempts: 1 } };
const connector =
  kind === "sqs"
    ? new AWSSQSConnector(address!, { waitTimeSeconds: 1, ...quiet })
    : kind === "pubsub"
      ? new GCPPubSubConnector(address!, extra!, { apiEndpoint: process.env.PUBSUB_TEST_ENDPOINT, ...quiet })
      : new AzureEventGridConnector(address!, "lakelogic", { topicName: extra!, maxWaitTimeSeconds: 10, ...quiet });

const signal = AbortSignal.timeout(Number(process.env.CHILD_RECEIVE_MS ?? 8000));
let result: { ok: boolean; n?: number; error?: string };
try {
  const records = await connector.receive(10, 1000, signal);
  result = { ok: true, n: records.length };
} catch (err) {
  result = { ok: false, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
}
await connector.close().catch(() => undefined);
console.log(JSON.stringify(result));
process.exit(0);
