import type { ComponentSpec, OptionsInput, OptionsOf } from "../core/spec.js";

export const WEBHOOK_DEFAULTS = {
  host: "127.0.0.1",
  path: "/",
  signatureHeader: "x-signature",
  maxBodyBytes: 1024 * 1024,
  maxQueued: 10_000,
  maxQueuedBytes: 64 * 1024 * 1024,
  retryAfterSeconds: 5,
};

export const webhookSpec = {
  type: "webhook",
  kind: "ack",
  summary:
    "An HTTP endpoint for pushed events (webhooks, Azure Event Grid push in Event Grid or CloudEvents 1.0 schema). " +
    "A delivery is answered 200 only after its batch is committed; 503 + Retry-After if the batch fails; 429 when the " +
    "bounded queue is full; 413 over maxBodyBytes. Answers both Event Grid validation handshakes.",
  options: {
    port: { type: "integer", required: true, min: 0, max: 65535, description: "Port to listen on (0 = any free port)." },
    host: { type: "string", default: WEBHOOK_DEFAULTS.host, description: "Interface to bind; expose it through a reverse proxy or tunnel." },
    path: { type: "string", default: WEBHOOK_DEFAULTS.path, description: "Path that accepts events; other paths get 404." },
    hmacSecret: { type: "string", secret: true, description: "When set, each POST must carry the HMAC-SHA256 of its body, else 401." },
    signatureHeader: { type: "string", default: WEBHOOK_DEFAULTS.signatureHeader, description: "Header with the signature: `sha256=<hex>` or bare hex." },
    maxBodyBytes: { type: "integer", min: 1, default: WEBHOOK_DEFAULTS.maxBodyBytes, description: "Larger bodies get 413." },
    maxQueued: { type: "integer", min: 1, default: WEBHOOK_DEFAULTS.maxQueued, description: "Events held (queued + in an uncommitted batch); beyond it, 429." },
    maxQueuedBytes: { type: "integer", min: 1, default: WEBHOOK_DEFAULTS.maxQueuedBytes, description: "Body bytes held; beyond it, 429." },
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
