import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { StreamWorkflowInput } from "../../workflows/types.js";
import { oneOf } from "./args.js";
import { UsageError } from "./types.js";

/** Flags every Temporal command accepts. */
export const CONNECTION_FLAGS = {
  address: { type: "string" },
  namespace: { type: "string" },
  "task-queue": { type: "string" },
} as const;

export const CONNECTION_HELP = `  --address HOST:PORT   Temporal frontend (default: $TEMPORAL_ADDRESS or 127.0.0.1:7233)
  --namespace NAME      (default: $TEMPORAL_NAMESPACE or default)
  --task-queue NAME     the shared LakeLogic queue (default: lakelogic)`;

export function connectionOf(values: { address?: string; namespace?: string; "task-queue"?: string }) {
  return { address: values.address, namespace: values.namespace, taskQueue: values["task-queue"] };
}

/** Flags that describe a stream, for `run`, `start` and `schedule create`. */
export const STREAM_FLAGS = {
  source: { type: "string", short: "s" },
  mode: { type: "string", short: "m" },
  engine: { type: "string" },
  checkpoint: { type: "string" },
  "checkpoint-key": { type: "string" },
  "target-path": { type: "string" },
  "batch-size": { type: "string" },
  "max-wait-ms": { type: "string" },
  "max-record-bytes": { type: "string" },
  "reset-checkpoint": { type: "boolean" },
} as const;

/** The parsed values of STREAM_FLAGS: strings, and booleans for the switches. */
export type StreamFlagValues = {
  [K in keyof typeof STREAM_FLAGS]?: (typeof STREAM_FLAGS)[K]["type"] extends "boolean" ? boolean : string;
};

export const STREAM_HELP = `  -s, --source JSON|FILE   source config (default: the contract's source: block)
  -m, --mode MODE          available_now | continuous
      --engine ENGINE      duckdb | polars
      --checkpoint PATH    SQLite file (as the workers see it) or "target"
      --checkpoint-key KEY default stream::<dataset>
      --target-path DIR    the lake directory, as the workers see it
      --batch-size N       records per batch
      --max-wait-ms N      cut a batch this long after its first record
      --max-record-bytes N quarantine records larger than this (default 16 MiB)
      --reset-checkpoint   start over although the lake holds later batches (a lost checkpoint)`;

function positive(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a whole number >= 1 (got "${value}")`);
  return n;
}

export function parseJsonObject(flag: string, text: string): Record<string, unknown> {
  const raw = text.trim().startsWith("{") ? text : existsSync(text) ? readFileSync(text, "utf8") : undefined;
  if (raw === undefined) throw new UsageError(`${flag}: "${text}" is neither JSON nor an existing file`);
  try {
    const value = JSON.parse(raw) as unknown;
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not an object");
    return value as Record<string, unknown>;
  } catch (err) {
    throw new UsageError(`${flag}: expected a JSON object: ${(err as Error).message}`);
  }
}

/**
 * The workflow input from a contract path and flags. Paths become absolute, because the
 * workers resolve them, not this shell. Without --source, the contract's source: block is used
 * by the workers (the workflow input then carries it explicitly for visibility).
 */
export function streamInputOf(
  contract: string,
  values: StreamFlagValues,
  contractSource: Record<string, unknown> | undefined,
  defaultMode: "available_now" | "continuous",
): StreamWorkflowInput {
  const source = values.source ? parseJsonObject("--source", values.source) : contractSource;
  if (!source || typeof source.type !== "string") {
    throw new UsageError("give --source '{\"type\": ...}', or a source: block with a type in the contract");
  }
  const input: StreamWorkflowInput = {
    contract: resolve(contract),
    source: source as StreamWorkflowInput["source"],
    mode: oneOf("--mode", values.mode, ["available_now", "continuous"] as const, defaultMode),
  };
  if (values.engine) input.engine = oneOf("--engine", values.engine, ["duckdb", "polars"] as const, "duckdb");
  if (values.checkpoint) input.checkpoint = values.checkpoint === "target" ? "target" : resolve(values.checkpoint);
  if (values["checkpoint-key"]) input.checkpointKey = values["checkpoint-key"];
  if (values["target-path"]) input.targetPath = resolve(values["target-path"]);
  const batchSize = positive("--batch-size", values["batch-size"]);
  if (batchSize) input.batchSize = batchSize;
  const maxWaitMs = positive("--max-wait-ms", values["max-wait-ms"]);
  if (maxWaitMs) input.maxWaitMs = maxWaitMs;
  const maxRecordBytes = positive("--max-record-bytes", values["max-record-bytes"]);
  if (maxRecordBytes) input.maxRecordBytes = maxRecordBytes;
  if (values["reset-checkpoint"] === true) input.resetCheckpoint = true;
  return input;
}
