import type { ComponentSpec, OptionsInput, OptionsOf } from "../core/spec.js";

export const WEBHOOK_DEFAULTS = {
  host: "127.0.0.1",
  path: "/",
  signatureHeader: "x-signature",
  maxBodyBytes: 1024 * 1024,
  maxQueued: 10_000,
  maxQueuedBytes: 64 * 1024 * 1024,
  retryAfterSeconds: 5,
  bodyTimeoutMs: 30_000,
  maxConnections: 256,
  dedupeWindow: 0,
};

export const webhookSpec = {
  type: "webhook",
  kind: "ack",
  summary:
    "An HTTP endpoint for pushed events (webhooks, Azure Event Grid push in Event Grid or CloudEvents 1.0 schema). " +
    "A delivery is answered 200 only after its batch is committed; 503 + Retry-After if the batch fails; 429 when the " +
    "bounded queue is full; 413 over maxBodyBytes; 408 for a body slower than bodyTimeoutMs. Answers both Event Grid " +
    "validation handshakes (a validation event mixed with other events gets 400).",
  options: {
    port: { type: "integer", required: true, min: 0, max: 65535, description: "Port to listen on (0 = any free port)." },
    host: { type: "string", default: WEBHOOK_DEFAULTS.host, description: "Interface to bind; expose it through a reverse proxy or tunnel." },
    path: { type: "string", default: WEBHOOK_DEFAULTS.path, description: "Path that accepts events; other paths get 404." },
    hmacSecret: { type: "string", secret: true, description: "When set, each POST must carry the HMAC-SHA256 of its body, else 401." },
    signatureHeader: { type: "string", default: WEBHOOK_DEFAULTS.signatureHeader, description: "Header with the signature: `sha256=<hex>` or bare hex." },
    maxBodyBytes: { type: "integer", min: 1, default: WEBHOOK_DEFAULTS.maxBodyBytes, description: "Larger bodies get 413." },
    maxQueued: { type: "integer", min: 1, default: WEBHOOK_DEFAULTS.maxQueued, description: "Events held (queued + in an uncommitted batch); beyond it, 429." },
    maxQueuedBytes: {
      type: "integer",
      min: 1,
      default: WEBHOOK_DEFAULTS.maxQueuedBytes,
      description: "Body bytes held, counting bodies still being read; beyond it, 429.",
    },
    bodyTimeoutMs: {
      type: "integer",
      min: 1,
      default: WEBHOOK_DEFAULTS.bodyTimeoutMs,
      description: "A body must arrive whole within this many ms of its headers; a stalled or trickling body gets 408 and the connection is closed.",
    },
    maxConnections: {
      type: "integer",
      min: 1,
      default: WEBHOOK_DEFAULTS.maxConnections,
      description: "Open connections (including requests waiting for their commit); connections beyond it are closed at once.",
    },
    dedupeWindow: {
      type: "integer",
      min: 0,
      default: WEBHOOK_DEFAULTS.dedupeWindow,
      description:
        "Replay protection: how many recently committed event ids to remember (0 = off). A retried delivery of a " +
        "remembered event gets 200 without storing it again; a retry while the first copy is still being committed gets " +
        "503 + Retry-After. Only turn it on when `id` names the event, not the entity it is about.",
    },
    dedupeHeader: {
      type: "string",
      description: "With dedupeWindow: a header holding the delivery id (e.g. `X-GitHub-Delivery`) to use instead of the event's `id`.",
    },
    retryAfterSeconds: { type: "integer", min: 0, default: WEBHOOK_DEFAULTS.retryAfterSeconds, description: "Retry-After sent with 429 and 503." },
    allowedOrigins: { type: "string[]", description: "CloudEvents validation: origins allowed to deliver (default any)." },
    allowedRate: { type: "integer", min: 1, description: "CloudEvents validation: WebHook-Allowed-Rate to grant, per minute (default `*`)." },
    unwrapData: {
      type: "boolean",
      default: false,
      description: "Make the record the event's `data` (Event Grid / CloudEvents envelopes); the event id stays the position.",
    },
  },
} as const satisfies ComponentSpec;

/** The options of `new WebhookSource(...)`: those of `webhookSpec`. */
export type WebhookOptions = OptionsInput<typeof webhookSpec>;

/** The options with every default filled in. */
export type ResolvedWebhookOptions = OptionsOf<typeof webhookSpec>;

/** `eventgrid-push`: the webhook source under the name of Azure Event Grid push delivery. */
export const eventGridPushSpec = {
  ...webhookSpec,
  type: "eventgrid-push",
  summary: `Alias of \`webhook\` for Azure Event Grid push delivery. ${webhookSpec.summary}`,
} as const;
