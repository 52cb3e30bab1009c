/**
 * Facts several rules need (is this a stream? which trigger? which strategy?), read from the
 * raw contract once and in one way, so two rules can never disagree about them.
 */
import { formatPath, type YamlPath } from "../contract/yaml.js";
import { isMapping, normalizeToken, type RawContract } from "./raw.js";

/** A value found in the contract, with the key it was found under (for positions and messages). */
export interface Located {
  /** As written. */
  value: string;
  /** Lower-cased, without `_`, `-` or spaces (see `normalizeToken`). */
  token: string;
  path: YamlPath;
}

function located(contract: RawContract, path: YamlPath): Located | undefined {
  const value = contract.text(path);
  if (value === undefined || value.trim() === "") return undefined;
  return { value, token: normalizeToken(value), path };
}

/**
 * Source types whose events arrive as a stream read resumably: after a restart the batch in
 * flight is delivered again. Keys are normalised tokens, values the canonical name. The
 * original missed the queue and push transports here (its shortcoming 12).
 */
export const STREAMING_SOURCE_TYPES: ReadonlyMap<string, string> = new Map([
  ["kafka", "kafka"],
  ["sse", "sse"],
  ["serversentevents", "sse"],
  ["websocket", "websocket"],
  ["websockets", "websocket"],
  ["ws", "websocket"],
  ["sqs", "sqs"],
  ["awssqs", "sqs"],
  ["pubsub", "pubsub"],
  ["gcppubsub", "pubsub"],
  ["googlepubsub", "pubsub"],
  ["servicebus", "servicebus"],
  ["azureservicebus", "servicebus"],
  ["eventgrid", "eventgrid"],
  ["azureeventgrid", "eventgrid"],
  ["webhook", "webhook"],
  // Event Grid push delivery is a webhook (sources/webhook/spec.ts declares it as eventgrid-push).
  ["eventgridpush", "webhook"],
  ["webhooks", "webhook"],
  ["eventhubs", "eventhubs"],
  ["eventhub", "eventhubs"],
  ["azureeventhubs", "eventhubs"],
  ["kinesis", "kinesis"],
  ["awskinesis", "kinesis"],
  // The original's generic `type: stream` (transport in `options.kind`).
  ["stream", "stream"],
]);

/** Push transports: nothing to seek back to, so missed events are gone. */
export const NO_REPLAY_SOURCES: ReadonlySet<string> = new Set(["websocket", "webhook"]);

/** Triggers under which a run is resumed from a checkpoint, so a batch can be replayed. */
export const RESUMABLE_TRIGGERS: readonly string[] = [
  "available_now",
  "continuous",
  "micro_batch",
  "processing_time",
  "once",
];
const RESUMABLE_TRIGGER_TOKENS: ReadonlySet<string> = new Set(RESUMABLE_TRIGGERS.map(normalizeToken));

export interface SourceFact extends Located {
  /** Canonical transport name when it is a streaming one (`kafka`, `sqs`, …). */
  transport?: string;
}

/**
 * The source transport. `source.type` is authoritative; when it is the generic `stream` (or not
 * a known transport), `source.kind` / `source.options.kind` may name the transport.
 */
export function sourceOf(contract: RawContract): SourceFact | undefined {
  const candidates: YamlPath[] = [
    ["source", "type"],
    ["source", "kind"],
    ["source", "options", "kind"],
  ];
  let first: SourceFact | undefined;
  for (const path of candidates) {
    const found = located(contract, path);
    if (!found) continue;
    const transport = STREAMING_SOURCE_TYPES.get(found.token);
    const fact: SourceFact = transport === undefined ? found : { ...found, transport };
    first ??= fact;
    if (transport !== undefined && transport !== "stream") return fact;
  }
  return first;
}

export function hasNoReplayableCursor(source: SourceFact | undefined): boolean {
  return source?.transport !== undefined && NO_REPLAY_SOURCES.has(source.transport);
}

/** Where triggers are written in practice; the first one found wins. */
export const TRIGGER_PATHS: readonly YamlPath[] = [
  ["trigger"],
  ["streaming", "trigger"],
  ["source", "trigger"],
  ["source", "options", "trigger"],
  ["materialization", "trigger"],
];

/** The run trigger, wherever it is written; `{ mode: continuous }` counts as `continuous`. */
export function triggerOf(contract: RawContract): Located | undefined {
  for (const path of TRIGGER_PATHS) {
    const raw = contract.get(path);
    if (typeof raw === "string") {
      const found = located(contract, path);
      if (found) return found;
    } else if (isMapping(raw)) {
      for (const key of ["mode", "type", "kind"]) {
        const inner = contract.text([...path, key]);
        if (inner !== undefined && inner.trim() !== "") {
          return { value: inner, token: normalizeToken(inner), path: [...path, key] };
        }
      }
    }
  }
  return undefined;
}

/**
 * How often the trigger runs a batch, as written: `processing_time` beside the trigger (the Python
 * `type: stream` options), or `interval` / `processing_time` inside a trigger mapping.
 */
export function triggerIntervalOf(contract: RawContract, trigger: Located): Located | undefined {
  const holder = trigger.path.slice(0, -1);
  const inMapping = isMapping(contract.get(holder)) && ["mode", "type", "kind"].includes(String(trigger.path[trigger.path.length - 1]));
  const candidates: YamlPath[] = inMapping
    ? [[...holder, "interval"], [...holder, "processing_time"], [...holder.slice(0, -1), "processing_time"]]
    : [[...holder, "processing_time"]];
  for (const path of candidates) {
    const found = located(contract, path);
    if (found) return found;
  }
  return undefined;
}

export interface StrategyFact {
  /** Lower-cased; `append` when not written. */
  value: string;
  declared: boolean;
  /** The strategy key, else the `materialization` key, else nothing to point at. */
  path?: YamlPath;
}

export function strategyOf(contract: RawContract): StrategyFact {
  const written = contract.text(["materialization", "strategy"]);
  if (written !== undefined && written.trim() !== "") {
    return { value: written.trim().toLowerCase(), declared: true, path: ["materialization", "strategy"] };
  }
  return {
    value: "append",
    declared: false,
    ...(contract.has(["materialization"]) ? { path: ["materialization"] } : {}),
  };
}

/** Why a contract counts as streaming: the first signal found, for messages and positions. */
export interface StreamingSignal {
  /** The key and value that make it one, e.g. `source.type: kafka`. */
  evidence: string;
  path: YamlPath;
}

export function streamingSignal(contract: RawContract): StreamingSignal | undefined {
  const source = sourceOf(contract);
  if (source?.transport !== undefined) {
    return { evidence: `${formatPath(source.path)}: ${source.value}`, path: source.path };
  }
  for (const key of ["mode", "load_mode"]) {
    const mode = located(contract, ["source", key]);
    if (mode?.token === "streaming") return { evidence: `source.${key}: ${mode.value}`, path: mode.path };
  }
  if (contract.get(["source", "streaming"]) === true) {
    return { evidence: "source.streaming: true", path: ["source", "streaming"] };
  }
  const trigger = triggerOf(contract);
  if (trigger && RESUMABLE_TRIGGER_TOKENS.has(trigger.token)) {
    return { evidence: `${formatPath(trigger.path)}: ${trigger.value}`, path: trigger.path };
  }
  return undefined;
}

/** `primary_key` holds at least one non-empty column name (a list, or a single string). */
export function hasPrimaryKey(contract: RawContract): boolean {
  const pk = contract.get(["primary_key"]);
  if (typeof pk === "string") return pk.trim() !== "";
  if (Array.isArray(pk)) return pk.some((k) => typeof k === "string" && k.trim() !== "");
  return false;
}
