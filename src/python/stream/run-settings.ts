/**
 * What a contract says about how its stream runs — trigger, batch size, batch interval, where the
 * checkpoint lives — for the runners (`lakelogic run`, `start`, `schedule`), whose flags override
 * it. Secrets are not touched here: the source config comes back with its `env:` references, to be
 * resolved by the process that creates the source.
 */
import { dirname, isAbsolute, join, resolve } from "node:path";
import { parseProcessingTime, streamModeOfTrigger, type TriggerRunMode } from "../../contract/normalise/trigger.js";
import type { Contract } from "../../contract/types.js";
import { ConfigError } from "../../errors.js";
import { parseOptions, type ComponentSpec, type Environment } from "../../sources/core/spec.js";
import { camelKey } from "./options.js";
import { STREAM_OPTIONS } from "./spec.js";

export interface StreamRunSettings {
  /** From the contract's trigger; undefined when it names none. */
  mode?: TriggerRunMode;
  /** `trigger: processing_time`: a batch starts every this many ms (the trigger's `processing_time`). */
  intervalMs?: number;
  /** Other triggers: the longest a batch waits after its first record, from the same `processing_time`. */
  maxWaitMs?: number;
  /** `type: stream`: `batch_size`, capped by `max_offsets_per_trigger`. */
  batchSize?: number;
  /** `type: stream`: the declared checkpoint, else the default location (see `defaultCheckpoint`). */
  checkpoint?: string;
  /** The contract's source with the defaults a run fills in (the Kafka consumer group); references kept. */
  source?: { type: string; [option: string]: unknown };
}


const runnerSpec = {
  type: "stream",
  kind: "cursor",
  summary: "The run settings of a `type: stream` source.",
  options: {
    checkpoint: STREAM_OPTIONS.checkpoint,
    batchSize: STREAM_OPTIONS.batchSize,
    processingTime: STREAM_OPTIONS.processingTime,
    maxOffsetsPerTrigger: STREAM_OPTIONS.maxOffsetsPerTrigger,
  },
} as const satisfies ComponentSpec;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** Whether a contract's source is the Python package's `type: stream`, and which transport it names. */
export function streamSourceKind(source: unknown): "kafka" | "eventhubs" | undefined {
  if (!isObj(source) || String(source["type"]).toLowerCase() !== "stream") return undefined;
  const kind = isObj(source["options"]) && source["options"]["kind"] !== undefined ? source["options"]["kind"] : source["kind"];
  const k = typeof kind === "string" ? kind.toLowerCase() : undefined;
  return k === "kafka" || k === "eventhubs" ? k : undefined;
}

/** The run settings `contract` declares. `env` supplies `LAKELOGIC_CHECKPOINT_ROOT` and `env:` references of run options. */
export function streamRunSettings(contract: Contract, env: Environment = process.env): StreamRunSettings {
  const out: StreamRunSettings = {};
  if (contract.trigger !== undefined) out.mode = streamModeOfTrigger(contract.trigger);
  const source = contract.source;
  const isStream = isObj(source) && source.type.toLowerCase() === "stream";
  const runner = isStream ? parseOptions(runnerSpec, runnerOptionsOf(source), env) : {};
  const interval = runner.processingTime ?? triggerInterval(contract.raw);
  // One spelling for both: the interval of a processing_time trigger, else the batch's longest wait.
  if (interval !== undefined) out[out.mode === "processing_time" ? "intervalMs" : "maxWaitMs"] = intervalMs(interval);
  if (isStream) {
    const size = runner.batchSize ?? runner.maxOffsetsPerTrigger;
    if (size !== undefined) out.batchSize = Math.min(size, runner.maxOffsetsPerTrigger ?? size);
    out.checkpoint = runner.checkpoint === undefined ? defaultCheckpoint(contract, env) : sqliteName(runner.checkpoint);
  }
  if (source) out.source = withGroup(source, contract.dataset);
  return out;
}

function intervalMs(text: string): number {
  const ms = parseProcessingTime(text);
  if (ms === undefined) throw new ConfigError("processing_time", `expected an interval such as "30 seconds" or 30s; got ${JSON.stringify(text)}`);
  return ms;
}

/** The run options of a stream source, from beside `type` and under `options:` (each given once). */
function runnerOptionsOf(source: Obj): Obj {
  const picked: Obj = {};
  const take = (holder: Obj) => {
    for (const [key, value] of Object.entries(holder)) {
      const k = camelKey(key);
      if (!(k in runnerSpec.options) || value === undefined || value === null) continue;
      if (k in picked) throw new ConfigError(`source stream: ${k}`, "is given both beside `type` and under `options:`; give it once");
      picked[k] = value;
    }
  };
  take(source);
  if (isObj(source["options"])) take(source["options"]);
  return picked;
}

/**
 * The interval written with the contract's trigger: `processing_time` beside it, or `interval` /
 * `processing_time` inside a trigger mapping. The trigger is looked for where the contract loader
 * looks (top level, source, source options, materialization; the first one written wins).
 */
function triggerInterval(raw: Obj): string | undefined {
  const source = raw["source"];
  const holders = [raw, source, isObj(source) ? source["options"] : undefined, raw["materialization"]];
  // A number without a unit is kept, so that intervalMs refuses it rather than it being ignored.
  const text = (v: unknown) => (typeof v === "number" ? String(v) : typeof v === "string" && v.trim() !== "" ? v : undefined);
  for (const holder of holders) {
    if (!isObj(holder) || holder["trigger"] === undefined || holder["trigger"] === null || holder["trigger"] === "") continue;
    const trigger = holder["trigger"];
    const inside = isObj(trigger) ? (text(trigger["interval"]) ?? text(trigger["processing_time"])) : undefined;
    return inside ?? text(holder["processing_time"]);
  }
  return undefined;
}

/**
 * Where a stream contract's checkpoint lives when it declares none: under
 * `$LAKELOGIC_CHECKPOINT_ROOT` (a directory or an object-store URI, for containers whose disk is
 * thrown away), else in `_checkpoints/` beside the contract file. One location per dataset.
 */
export function defaultCheckpoint(contract: Pick<Contract, "dataset" | "file">, env: Environment = process.env): string {
  const root = env["LAKELOGIC_CHECKPOINT_ROOT"]?.trim();
  if (root) return sqliteName(`${root.replace(/\/+$/, "")}/${contract.dataset}`);
  const dir = contract.file === undefined ? process.cwd() : dirname(resolve(contract.file));
  return join(dir, "_checkpoints", `${contract.dataset}.sqlite`);
}

/** A local path names a SQLite file (`.sqlite` added, as the Python package does); a URI or keyword is kept. */
function sqliteName(location: string): string {
  if (location === "memory" || location === "target" || /^[a-z][a-z0-9+.-]*:\/\//i.test(location)) return location;
  const path = /\.(sqlite|db)$/i.test(location) ? location : `${location}.sqlite`;
  return isAbsolute(path) ? path : resolve(path);
}

/** The source with a consumer group named after the dataset when a Kafka source names none. */
function withGroup(source: NonNullable<Contract["source"]>, dataset: string): NonNullable<Contract["source"]> {
  const type = source.type.toLowerCase();
  if (type !== "kafka" && type !== "stream") return source;
  const nested = isObj(source["options"]) ? source["options"] : undefined;
  const named = (o: Obj | undefined) => o !== undefined && ["groupId", "consumerGroup"].some((k) => Object.keys(o).some((key) => camelKey(key) === k));
  if (named(source) || (type === "stream" && named(nested))) return source;
  const group = `lakelogic-${dataset}`;
  if (type === "stream" && nested) return { ...source, options: { ...nested, group_id: group } };
  return { ...source, groupId: group };
}
