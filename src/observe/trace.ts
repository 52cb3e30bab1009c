// Types only: the OpenTelemetry packages are optional peers, loaded at run time through loadPeer.
import type * as OtelApi from "@opentelemetry/api";
import { MissingDependencyError } from "../errors.js";
import { loadPeer } from "../util/peer.js";

/** Span names, one per batch stage (docs/observability.md). */
export const SPANS = {
  batch: "lakelogic.batch",
  fetch: "lakelogic.fetch",
  validate: "lakelogic.validate",
  write: "lakelogic.write",
  commit: "lakelogic.commit",
  ack: "lakelogic.ack",
} as const;

export type SpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

/** A stage's span; `end(error)` marks it failed. A no-op when tracing is off. */
export interface StageSpan {
  setAttributes(attributes: SpanAttributes): void;
  end(error?: unknown): void;
}

/** undefined: not tried yet; null: @opentelemetry/api is not installed (spans are no-ops). */
let api: typeof OtelApi | null | undefined;

const NO_SPAN: StageSpan = Object.freeze({ setAttributes: () => undefined, end: () => undefined });

/**
 * Load @opentelemetry/api once, if installed. Spans go to whatever tracer provider the
 * application registered (none registered: the API's no-op tracer). Called when a pipeline opens.
 */
export async function loadTracing(): Promise<boolean> {
  if (api === undefined) {
    try {
      const mod = await loadPeer<typeof OtelApi & { default?: typeof OtelApi }>("@opentelemetry/api", "Tracing");
      api = mod.trace ? mod : (mod.default ?? null);
    } catch (err) {
      if (!(err instanceof MissingDependencyError)) throw err;
      api = null;
    }
  }
  return api !== null;
}

function clean(attributes: SpanAttributes | undefined): OtelApi.Attributes {
  const out: OtelApi.Attributes = {};
  for (const [k, v] of Object.entries(attributes ?? {})) if (v !== undefined) out[k] = v;
  return out;
}

function wrap(otel: typeof OtelApi, span: OtelApi.Span): StageSpan {
  return {
    setAttributes: (a) => void span.setAttributes(clean(a)),
    end(error?: unknown) {
      if (error !== undefined) {
        const e = error instanceof Error ? error : new Error(typeof error === "string" ? error : "failed");
        span.recordException({ name: e.name, message: e.message });
        span.setStatus({ code: otel.SpanStatusCode.ERROR, message: e.message });
      }
      span.end();
    },
  };
}

/** Start a stage's span as a child of the active one (e.g. the batch's). */
export function startStage(name: string, attributes?: SpanAttributes): StageSpan {
  if (!api) return NO_SPAN;
  return wrap(api, api.trace.getTracer("lakelogic").startSpan(name, { attributes: clean(attributes) }));
}

/** Run `fn` inside a span that is active meanwhile (the stages it starts are its children). */
export async function inStage<T>(name: string, attributes: SpanAttributes | undefined, fn: (span: StageSpan) => Promise<T>): Promise<T> {
  const otel = api;
  if (!otel) return fn(NO_SPAN);
  const span = otel.trace.getTracer("lakelogic").startSpan(name, { attributes: clean(attributes) });
  const stage = wrap(otel, span);
  try {
    const result = await otel.context.with(otel.trace.setSpan(otel.context.active(), span), () => fn(stage));
    stage.end();
    return result;
  } catch (err) {
    stage.end(err);
    throw err;
  }
}

type SdkTraceNode = typeof import("@opentelemetry/sdk-trace-node");
type OtlpHttp = typeof import("@opentelemetry/exporter-trace-otlp-http");

export interface OtlpTracing {
  /** Flush the spans still buffered and stop exporting. */
  shutdown(): Promise<void>;
}

/**
 * Export spans over OTLP/HTTP (JSON) to `endpoint` (the base URL; `/v1/traces` is added), or
 * without one to where OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT say.
 * Needs @opentelemetry/api, @opentelemetry/sdk-trace-node and @opentelemetry/exporter-trace-otlp-http.
 */
export async function setupOtlpTracing(options: { endpoint?: string } = {}): Promise<OtlpTracing> {
  const feature = "Exporting traces (--otlp-endpoint, OTEL_EXPORTER_OTLP_ENDPOINT)";
  await loadPeer("@opentelemetry/api", feature);
  await loadTracing();
  const sdk = await loadPeer<SdkTraceNode>("@opentelemetry/sdk-trace-node", feature);
  const otlp = await loadPeer<OtlpHttp>("@opentelemetry/exporter-trace-otlp-http", feature);
  const url = options.endpoint === undefined ? undefined : `${options.endpoint.replace(/\/+$/, "")}/v1/traces`;
  const exporter = new otlp.OTLPTraceExporter(url === undefined ? {} : { url });
  const provider = new sdk.NodeTracerProvider({ spanProcessors: [new sdk.BatchSpanProcessor(exporter)] });
  provider.register();
  return { shutdown: () => provider.shutdown() };
}
