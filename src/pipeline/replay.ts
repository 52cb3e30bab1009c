/**
 * Replaying quarantine: the quarantine rows still pending, validated again with the contract as
 * it is now, the ones that pass written to the table as the stream writes them, and every row's
 * outcome kept in the replay log (src/lake/replay-log.ts). docs/lake.md, "Quarantine: list, show,
 * replay".
 *
 * A replay is a stream of its own — checkpoint key `<stream key>#replay`, source the pending rows
 * in a fixed order (batch id, then quarantine id) — run through the stream's batch lifecycle
 * (open, validate, write + commit: ./pipeline.ts, ./commit.ts), so its rows reach the table by the
 * same write path (merge on the primary key, the lake's commit log and checkpoint). After each
 * commit the batch's outcomes are merged into the replay log. Which rows are pending is read from
 * that log, not from the replay's cursor: a replay killed at any point and run again re-validates
 * exactly the rows whose outcome was not logged, and a row written again in between is merged
 * onto itself (hence: merge targets only). A row already tried with this very contract is not
 * tried again, so a second replay with nothing changed does nothing.
 */
import type { Cursor } from "../checkpoint/types.js";
import type { Contract } from "../contract/types.js";
import { createEngine, type Engine, type EngineName } from "../engine/index.js";
import { ConfigError } from "../errors.js";
import { canonicalJson, sha256Hex } from "../lake/json.js";
import { openReplayLog, readQuarantineEntries, replayLogRow, type QuarantineEntry, type ReplayEntry } from "../lake/replay-log.js";
import { resolveLakeConfig } from "../lake/config.js";
import type { LakeWriter } from "../lake/types.js";
import { decodeBody } from "../sources/core/decode.js";
import type { CursorSource, SourceRecord } from "../sources/core/types.js";
import { commitBatch, positionOf, type CommitHooks, type StreamDestination } from "./commit.js";
import { openStream, type StreamTarget } from "./open.js";
import { StreamPipeline } from "./pipeline.js";
import { resolveStreamSettings, type CheckpointOption } from "./settings.js";
import { DECODE_RULE_ID, validateRecords, type ValidatedBatch } from "./validate.js";

/** Which pending rows to replay (all of them when empty). */
export interface QuarantineFilter {
  /** Rows that failed this rule (their newest reasons). */
  rule?: string;
  /** Rows first quarantined by this batch of the stream. */
  batch?: number;
}

/** @internal Crash tests stop a replay here. */
export interface ReplayHooks {
  /** The batch's rows are written, its checkpoint commit is next (checkpoint outside the lake). */
  afterWrite?: CommitHooks["afterWrite"];
  /** The batch is committed, its outcomes are not yet in the replay log. */
  beforeLog?: (batchId: number) => Promise<void> | void;
}

export interface ReplayOptions extends QuarantineFilter {
  /** Lake directory; overrides `materialization.target_path`. */
  targetPath?: string;
  /** The stream's checkpoint key (default `stream::<dataset>`); the replay commits as `<key>#replay`. */
  checkpointKey?: string;
  /** The replay's checkpoint store; default as for a stream (the lake's own for delta and ducklake). */
  checkpoint?: CheckpointOption;
  batchSize?: number;
  engine?: Engine | EngineName;
  /** Validate only: say what would be written, write nothing. */
  dryRun?: boolean;
  writerId?: string;
  hooks?: ReplayHooks;
}

export interface ReplayOutcome {
  quarantineId: string;
  status: ReplayEntry["status"];
  reasons: string[];
  ruleIds: string[];
}

export interface ReplayReport {
  replayKey: string;
  contractHash: string;
  dryRun: boolean;
  /** Pending rows this replay validated. */
  considered: number;
  replayed: number;
  stillQuarantined: number;
  /** The replay batches committed (none in a dry run). */
  batches: number[];
  outcomes: ReplayOutcome[];
}

/** The replay's checkpoint key for a stream's. */
export function replayKeyOf(streamKey: string): string {
  return `${streamKey}#replay`;
}

/**
 * A fingerprint of what decides a row's validity: fields, rules, key and schema policy (not where
 * they were written). A row tried under the same fingerprint is not tried again.
 */
export function contractHash(contract: Contract): string {
  const { primaryKey, fields, rowRules, datasetRules, schemaPolicy } = contract;
  const plain = JSON.parse(JSON.stringify({ primaryKey, fields, rowRules, datasetRules, schemaPolicy }, (k, v: unknown) => (k === "loc" ? undefined : v))) as unknown;
  return sha256Hex(canonicalJson(plain)).slice(0, 16);
}

/**
 * The rule ids a row failed last: a replay's that quarantined it again, else the stream's (a row
 * a replay wrote keeps the failure it was quarantined for, beside its status `replayed`).
 */
export function currentRuleIds(e: QuarantineEntry): string[] {
  return e.replay?.status === "quarantined" ? e.replay.ruleIds : e.ruleIds;
}

/** The reasons that go with `currentRuleIds`. */
export function currentReasons(e: QuarantineEntry): string[] {
  return e.replay?.status === "quarantined" ? e.replay.reasons : e.reasons;
}

/** The pending rows a replay with `hash` takes, in replay order (batch id, then quarantine id). */
export function pendingRows(entries: readonly QuarantineEntry[], hash: string, filter: QuarantineFilter = {}): QuarantineEntry[] {
  return entries
    .filter((e) => e.status === "pending" && e.replay?.contractHash !== hash)
    .filter((e) => filter.rule === undefined || currentRuleIds(e).includes(filter.rule))
    .filter((e) => filter.batch === undefined || e.batchId === filter.batch)
    .sort((a, b) => a.batchId - b.batchId || (a.quarantineId < b.quarantineId ? -1 : a.quarantineId > b.quarantineId ? 1 : 0));
}

/** A quarantine row as a record again: a decode failure is decoded (as JSON) from its raw payload. */
export function recordOf(e: QuarantineEntry): SourceRecord {
  const position = { quarantineId: e.quarantineId };
  if (e.raw !== null && (e.ruleIds.includes(DECODE_RULE_ID) || e.record === undefined)) {
    const payload = e.rawEncoding === "base64" ? new Uint8Array(Buffer.from(e.raw, "base64")) : e.raw;
    const decoded = decodeBody(payload, { name: "raw payload", missing: "no raw payload" });
    if ("error" in decoded) return { value: undefined, raw: payload, position, decodeError: decoded.error };
    return { value: decoded.value, raw: payload, position };
  }
  return { value: e.record, position };
}

/** What each record of a validated batch came to. */
function outcomesOf(records: readonly SourceRecord[], validated: ValidatedBatch): ReplayOutcome[] {
  const failed = new Map<string, ValidatedBatch["bad"][number]>();
  for (const b of validated.bad) failed.set((b.position as { quarantineId: string }).quarantineId, b);
  return records.map((r) => {
    const quarantineId = (r.position as { quarantineId: string }).quarantineId;
    const bad = failed.get(quarantineId);
    // A row a later row of the batch with its key replaced counts as replayed: its key holds the later one.
    return bad
      ? { quarantineId, status: "quarantined", reasons: bad.errors.map((e) => e.message), ruleIds: bad.errors.map((e) => e.ruleId) }
      : { quarantineId, status: "replayed", reasons: [], ruleIds: [] };
  });
}

/** The pending rows, handed out once per run; progress across runs lives in the replay log. */
class PendingRowsSource implements CursorSource {
  readonly kind = "cursor";
  readonly description: string;
  private taken = 0;

  constructor(
    private readonly records: readonly SourceRecord[],
    table: string,
  ) {
    this.description = `quarantine of ${table}`;
  }

  seek(): Promise<void> {
    this.taken = 0;
    return Promise.resolve();
  }

  /** The position after the first `n` rows: the last one's quarantine id. */
  private cursorAfter(n: number): Cursor {
    const last = this.records[n - 1];
    return last === undefined ? null : { quarantineId: (last.position as { quarantineId: string }).quarantineId };
  }

  currentCursor(): Cursor {
    return this.cursorAfter(this.taken);
  }

  endCursor(): Promise<Cursor> {
    return Promise.resolve(this.cursorAfter(this.records.length));
  }

  async *read(): AsyncIterable<SourceRecord> {
    while (this.taken < this.records.length) yield this.records[this.taken++]!;
  }
}

/** The stream's writer, but its bad rows are not written: they are in quarantine already, and the log takes their outcome. */
function withoutQuarantine(lake: LakeWriter): LakeWriter {
  return {
    write: (request) => lake.write(Object.assign(request, { bad: [] })),
    ...(lake.checkpointStore ? { checkpointStore: () => lake.checkpointStore!() } : {}),
    ...(lake.lastCommit ? { lastCommit: (key: string) => lake.lastCommit!(key) } : {}),
    close: () => lake.close(),
  };
}

/** Replay the contract's pending quarantine rows (see the module's comment). */
export async function replayQuarantine(contract: Contract, options: ReplayOptions = {}): Promise<ReplayReport> {
  const config = resolveLakeConfig(contract, options.targetPath !== undefined ? { targetPath: options.targetPath } : {});
  if (config.strategy !== "merge") {
    throw new ConfigError(
      "materialization.strategy",
      `replaying quarantine needs a merge target: a replay stopped between writing rows and logging them writes them again, ` +
        `which a merge on the primary key absorbs and "${config.strategy}" would not`,
    );
  }
  const streamSettings = resolveStreamSettings(contract, { ...(options.checkpointKey !== undefined ? { checkpointKey: options.checkpointKey } : {}) });
  const replayKey = replayKeyOf(streamSettings.key);
  const settings = resolveStreamSettings(contract, {
    mode: "available_now",
    checkpointKey: replayKey,
    ...(options.targetPath !== undefined ? { targetPath: options.targetPath } : {}),
    ...(options.checkpoint !== undefined ? { checkpoint: options.checkpoint } : {}),
    ...(options.batchSize !== undefined ? { batchSize: options.batchSize } : {}),
  });
  const hash = contractHash(contract);
  const read = { targetPath: settings.targetPath };
  const pending = pendingRows(await readQuarantineEntries(contract, read), hash, options);
  const records = pending.map(recordOf);
  const report: ReplayReport = { replayKey, contractHash: hash, dryRun: options.dryRun === true, considered: records.length, replayed: 0, stillQuarantined: 0, batches: [], outcomes: [] };
  const tally = (outcomes: ReplayOutcome[]) => {
    for (const o of outcomes) {
      report.outcomes.push(o);
      if (o.status === "replayed") report.replayed++;
      else report.stillQuarantined++;
    }
  };
  if (records.length === 0) return report;

  const engine = typeof options.engine === "object" ? options.engine : await createEngine(options.engine ?? "duckdb");
  try {
    if (options.dryRun) {
      for (let i = 0; i < records.length; i += settings.limits.maxRecords) {
        const chunk = records.slice(i, i + settings.limits.maxRecords);
        tally(outcomesOf(chunk, await validateRecords(engine, contract, chunk, settings.record)));
      }
      return report;
    }
    const stream = await openStream(settings, engine);
    const log = await openReplayLog(contract, read).catch(async (err: unknown) => {
      await stream.close();
      throw err;
    });
    const source = new PendingRowsSource(records, config.table);
    const pipeline = new StreamPipeline({ source, mode: "available_now", limits: settings.limits, validate: stream.validate });
    try {
      const target: StreamTarget = { ...stream.target, lake: withoutQuarantine(stream.target.lake) };
      const hooks = options.hooks ?? {};
      const dest: StreamDestination = {
        target,
        key: replayKey,
        writerId: options.writerId ?? `replay:${process.pid}`,
        ...(hooks.afterWrite ? { hooks: { afterWrite: hooks.afterWrite } } : {}),
      };
      let position = positionOf(await stream.start());
      await pipeline.open(position.cursor);
      const never = new AbortController().signal;
      while (true) {
        const batch = await pipeline.next(never);
        if (batch.records.length > 0) {
          const committed = await commitBatch(dest, position, batch);
          position = committed.position;
          const batchId = committed.record.batchId;
          const outcomes = outcomesOf(batch.records, await batch.validated());
          await hooks.beforeLog?.(batchId);
          const replayedAt = new Date().toISOString();
          const entries = outcomes.map((o): ReplayEntry => ({ ...o, contractHash: hash, replayKey, replayBatch: batchId, replayedAt }));
          await log.write({ batchId, good: entries.map(replayLogRow), bad: [] });
          report.batches.push(batchId);
          tally(outcomes);
        }
        if (batch.exhausted) break;
      }
      return report;
    } finally {
      await pipeline.close();
      await log.close().catch(() => undefined);
      await stream.close();
    }
  } finally {
    if (typeof options.engine !== "object") await engine.close();
  }
}
