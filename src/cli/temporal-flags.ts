import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { RunMode, StreamWorkflowInput } from "../../workflows/types.js";
import { checkpointLocationProblem } from "../checkpoint/location.js";
import { parseProcessingTime } from "../contract/normalise/trigger.js";
import type { LoadContractOptions } from "../contract/index.js";
import { ConfigError } from "../errors.js";
import type { Contract } from "../contract/types.js";
import { streamRunSettings } from "../sources/index.js";
import { resolveStreamSettings, type ResolveOptions, type StreamOverrides, type StreamSettings } from "../pipeline/settings.js";
import { isUri } from "../lake/index.js";
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
  interval: { type: "string" },
  engine: { type: "string" },
  checkpoint: { type: "string" },
  "checkpoint-key": { type: "string" },
  "target-path": { type: "string" },
  "batch-size": { type: "string" },
  "max-wait-ms": { type: "string" },
  "max-record-bytes": { type: "string" },
  "reset-checkpoint": { type: "boolean" },
  var: { type: "string", multiple: true },
  env: { type: "string" },
} as const;

/** The parsed values of STREAM_FLAGS: strings, lists for repeatable flags, booleans for the switches. */
export type StreamFlagValues = {
  [K in keyof typeof STREAM_FLAGS]?: (typeof STREAM_FLAGS)[K] extends { multiple: true }
    ? string[]
    : (typeof STREAM_FLAGS)[K]["type"] extends "boolean"
      ? boolean
      : string;
};

export const STREAM_HELP = `  -s, --source JSON|FILE   source config (default: the contract's source: block)
  -m, --mode MODE          available_now | continuous | processing_time
      --interval TIME      processing_time: a batch every TIME, e.g. 30s or "30 seconds"
                           (default: the contract's processing_time)
      --engine ENGINE      duckdb | polars
      --checkpoint PATH    SQLite file (as the workers see it) or "target"
      --checkpoint-key KEY default stream::<dataset>
      --target-path DIR    the lake directory, as the workers see it
      --batch-size N       records per batch
      --max-wait-ms N      cut a batch this long after its first record
      --max-record-bytes N quarantine records larger than this (default 16 MiB)
      --reset-checkpoint   start over although the lake holds later batches (a lost checkpoint)
      --var NAME=VALUE     a value for the contract's {NAME} placeholders (repeatable)
      --env NAME           the environments.<NAME> of _system.yaml that binds placeholders (default dev)`;

/** What the contract decides when the flags do not: said once for run, start and schedule. */
export const CONTRACT_SETTINGS_HELP = `Without flags the contract decides: its trigger (and processing_time) gives the mode and the
batch interval; a type: stream source also gives batch_size, max_offsets_per_trigger and the
checkpoint (default: $LAKELOGIC_CHECKPOINT_ROOT/<dataset>, else _checkpoints/<dataset>.sqlite
beside the contract).`;

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

/** `--var name=value` flags as the `vars` of loadContract; undefined when none is given. */
export function varsOf(flags: readonly string[] | undefined): Record<string, string> | undefined {
  if (!flags || flags.length === 0) return undefined;
  const vars: Record<string, string> = {};
  for (const flag of flags) {
    const eq = flag.indexOf("=");
    const name = eq < 0 ? "" : flag.slice(0, eq).trim();
    if (name === "") throw new UsageError(`--var expects NAME=VALUE (got "${flag}")`);
    if (Object.hasOwn(vars, name) && vars[name] !== flag.slice(eq + 1)) throw new UsageError(`--var ${name} is given twice with different values`);
    vars[name] = flag.slice(eq + 1);
  }
  return vars;
}

/** How to load the contract, from `--var` and `--env`: the same for run, start, schedule and lint. */
export function contractLoadOptionsOf(values: { var?: readonly string[] | undefined; env?: string | undefined }): LoadContractOptions {
  const vars = varsOf(values.var);
  if (values.env !== undefined && values.env.trim() === "") throw new UsageError("--env needs an environment name, e.g. --env prod");
  return { ...(vars ? { vars } : {}), ...(values.env ? { environment: values.env } : {}) };
}

/** A checkpoint as the workers must see it: a local path made absolute; a URI or keyword kept. */
function workerCheckpoint(location: string): string {
  if (location === "target" || /^[a-z][a-z0-9+.-]*:\/\//i.test(location)) return location;
  return resolve(location);
}

/**
 * What the stream flags say, as overrides of what the contract declares: the same for `run`,
 * `start` and `schedule create`, resolved with the contract by `resolveStreamSettings` (in this
 * process for `run`, on the workers for the others). `--interval` is checked against the mode
 * once it is known (`checkInterval`).
 */
export function streamOverridesOf(values: StreamFlagValues): StreamOverrides {
  const out: StreamOverrides = {};
  if (values.mode !== undefined) out.mode = oneOf("--mode", values.mode, STREAM_MODES, "available_now");
  if (values.interval !== undefined) out.intervalMs = intervalFlag(values.interval);
  if (values["checkpoint-key"] !== undefined) out.checkpointKey = values["checkpoint-key"];
  if (values.checkpoint !== undefined) out.checkpoint = values.checkpoint;
  if (values["target-path"] !== undefined) out.targetPath = values["target-path"];
  const batchSize = positive("--batch-size", values["batch-size"]);
  if (batchSize !== undefined) out.batchSize = batchSize;
  const maxWaitMs = positive("--max-wait-ms", values["max-wait-ms"]);
  if (maxWaitMs !== undefined) out.maxWaitMs = maxWaitMs;
  const maxRecordBytes = positive("--max-record-bytes", values["max-record-bytes"]);
  if (maxRecordBytes !== undefined) out.maxRecordBytes = maxRecordBytes;
  if (values["reset-checkpoint"] === true) out.resetCheckpoint = true;
  return out;
}

/**
 * A stream's settings as a command resolves them, with a checkpoint location no store can open
 * (the flag's or the contract's) refused as bad input before anything is read or started.
 */
export function commandSettings(contract: Contract, overrides: StreamOverrides, options: ResolveOptions = {}): StreamSettings {
  const settings = resolveStreamSettings(contract, overrides, options);
  const { checkpoint } = settings;
  const problem = typeof checkpoint !== "string" || ["target", "memory"].includes(checkpoint) ? undefined : checkpointLocationProblem(checkpoint);
  if (problem !== undefined) throw new ConfigError("checkpoint", problem);
  return settings;
}

/** `--interval` goes with processing_time: with another mode it is refused rather than ignored. */
export function checkInterval(values: StreamFlagValues, mode: RunMode): void {
  if (values.interval !== undefined && mode !== "processing_time") {
    throw new UsageError(`--interval goes with --mode processing_time (the mode is ${mode})`);
  }
}

/**
 * The workflow input from a contract path, the contract (loaded with the `--var` values) and the
 * flags. The input carries what the flags say, paths made absolute (the workers resolve them,
 * not this shell); each worker resolves the rest from the contract with the same rules as
 * `lakelogic run` (`resolveStreamSettings`). Without --source the contract's source: block is
 * used (the input carries it explicitly for visibility), its `env:` references unresolved: each
 * worker resolves them from its own environment.
 */
export function streamInputOf(
  contractPath: string,
  values: StreamFlagValues,
  contract: Contract,
  mode: { fallback: RunMode; fromContract: boolean },
): StreamWorkflowInput {
  const overrides = streamOverridesOf(values);
  // schedule create always drains: the contract's trigger does not choose its mode.
  if (!mode.fromContract) overrides.mode ??= mode.fallback;
  const settings = commandSettings(contract, overrides, { fallbackMode: mode.fallback });
  checkInterval(values, settings.mode);
  const source = values.source ? parseJsonObject("--source", values.source) : settings.source;
  if (!source || typeof source.type !== "string") {
    throw new UsageError("give --source '{\"type\": ...}', or a source: block in the contract");
  }
  const input: StreamWorkflowInput = {
    contract: resolve(contractPath),
    source: source as StreamWorkflowInput["source"],
    mode: settings.mode,
    // Known here, where the contract was loaded with its vars: the client need not load it again.
    checkpointKey: settings.key,
  };
  if (settings.intervalMs !== undefined) input.intervalMs = settings.intervalMs;
  const vars = varsOf(values.var);
  if (vars) input.vars = vars;
  if (values.env) input.environment = values.env;
  if (values.engine) input.engine = oneOf("--engine", values.engine, ["duckdb", "polars"] as const, "duckdb");
  // What the contract declares goes into the input too, so the UI shows what the stream runs
  // with; the workers resolve the same values from the contract either way.
  const declared = streamRunSettings(contract);
  const checkpoint = overrides.checkpoint ?? declared.checkpoint;
  if (typeof checkpoint === "string") input.checkpoint = workerCheckpoint(checkpoint);
  // A path is made absolute for the workers; a delta URI already names one place for all of them.
  if (overrides.targetPath !== undefined) input.targetPath = isUri(overrides.targetPath) ? overrides.targetPath : resolve(overrides.targetPath);
  const batchSize = overrides.batchSize ?? declared.batchSize;
  if (batchSize !== undefined) input.batchSize = batchSize;
  const maxWaitMs = overrides.maxWaitMs ?? declared.maxWaitMs;
  if (maxWaitMs !== undefined) input.maxWaitMs = maxWaitMs;
  if (overrides.maxRecordBytes !== undefined) input.maxRecordBytes = overrides.maxRecordBytes;
  if (overrides.resetCheckpoint) input.resetCheckpoint = true;
  return input;
}

/** The modes `--mode` takes (run and start; schedule drains only). */
export const STREAM_MODES = ["available_now", "continuous", "processing_time"] as const;

/** `--interval` in ms (30s, "30 seconds"). */
function intervalFlag(flag: string): number {
  const ms = parseProcessingTime(flag);
  if (ms === undefined) throw new UsageError(`--interval: expected an interval such as 30s or "30 seconds" (got "${flag}")`);
  return ms;
}
