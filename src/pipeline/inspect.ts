/**
 * Looking at a stream without running it (`lakelogic show`, `lakelogic status` without a
 * workflow): its lake as the lake's reading functions see it (src/lake/inspect.ts), and its
 * checkpoint, read from where `lakelogic run` keeps it (the same settings: ./settings.ts).
 * Nothing here writes, creates or locks anything a running stream needs.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { checkpointLocationProblem, openCheckpointLocation } from "../checkpoint/location.js";
import { parseLocation } from "../checkpoint/object-uri.js";
import type { CheckpointRecord, Counts, Cursor } from "../checkpoint/types.js";
import type { Contract } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import { describeTarget, inspectLake, readTargetCheckpoint, resolveLakeConfig, type LakeInspection } from "../lake/index.js";
import { redactText } from "../util/redact.js";
import type { CheckpointOption, StreamSettings } from "./settings.js";

/** A stream's checkpoint as a store holds it, or `found: false` with where it was looked for. */
export interface CheckpointView {
  key: string;
  /** The store: a SQLite file, an object-store location, or the lake (`checkpoint: "target"`). */
  location: string;
  found: boolean;
  cursor?: Cursor;
  batchId?: number;
  /** ISO-8601 UTC. */
  committedAt?: string;
  /** The counts of the last batch, and since the stream began. */
  batch?: Counts;
  totals?: Counts;
  writerId?: string;
  /**
   * What is known of how far behind the stream is without asking its source: the time since its
   * last commit, and how many batches the lake holds past the checkpoint (1: a batch written
   * whose commit did not happen yet, or a run in flight; more: a lost checkpoint).
   */
  lag?: { sinceCommitMs: number; lakeBatchesAhead: number | null };
}

export interface StreamInspection extends LakeInspection {
  dataset: string;
  table: string;
  /** Where the lake is (no credentials). */
  location: string;
  checkpoint: CheckpointView;
}

/** Where a checkpoint option reads from, for people (no credentials). */
function locationOf(option: CheckpointOption, contract: Contract | undefined, targetPath: string | undefined): string {
  if (option === "target") {
    if (!contract) return "the lake";
    const lake = describeTarget(resolveLakeConfig(contract, targetPath === undefined ? {} : { targetPath }));
    return `the lake (${lake.format} ${lake.location})`;
  }
  if (option === "memory") return "memory (kept by no store: nothing to read)";
  if (typeof option === "string") return redactText(option);
  return option.location ?? "the checkpoint store";
}

/**
 * Stream `key`'s checkpoint at `option`, read only: a SQLite file that does not exist is not
 * created (there is no checkpoint); `"target"` needs the stream's contract and lake.
 */
export async function readCheckpoint(
  option: CheckpointOption,
  key: string,
  lake?: { contract: Contract; targetPath?: string },
): Promise<{ location: string; record: CheckpointRecord | undefined }> {
  const location = locationOf(option, lake?.contract, lake?.targetPath);
  if (option === "memory") return { location, record: undefined };
  if (option === "target") {
    if (!lake) throw new ConfigError("checkpoint", '"target" keeps the checkpoint in the lake: give the stream\'s contract (--contract CONTRACT) to find its lake');
    return { location, record: await readTargetCheckpoint(lake.contract, key, lake.targetPath === undefined ? {} : { targetPath: lake.targetPath }) };
  }
  if (typeof option !== "string") return { location, record: await option.load(key) };
  const problem = checkpointLocationProblem(option);
  if (problem !== undefined) throw new ConfigError("checkpoint", problem);
  const parsed = parseLocation(option);
  if (parsed.kind !== "object" && !existsSync(parsed.kind === "file" ? fileURLToPath(parsed.path) : option)) return { location, record: undefined };
  const store = await openCheckpointLocation(option);
  try {
    return { location, record: await store.load(key) };
  } finally {
    await store.close();
  }
}

/** A checkpoint record (or its absence) as `show` and `status` print it. */
export function checkpointView(key: string, location: string, record: CheckpointRecord | undefined, lakeBatch?: number, now = Date.now()): CheckpointView {
  if (!record) return { key, location, found: false };
  return {
    key,
    location,
    found: true,
    cursor: record.cursor,
    batchId: record.batchId,
    committedAt: record.committedAt.toISOString(),
    batch: record.batch,
    totals: record.totals,
    writerId: record.writerId,
    lag: { sinceCommitMs: Math.max(0, now - record.committedAt.getTime()), lakeBatchesAhead: lakeBatch === undefined ? null : Math.max(0, lakeBatch - record.batchId) },
  };
}

/** A stream's lake and checkpoint, as its settings (the same as `lakelogic run`'s) find them. */
export async function inspectStream(settings: StreamSettings, options: { commits?: number } = {}): Promise<StreamInspection> {
  const { contract, key, targetPath } = settings;
  const lake = await inspectLake(contract, { targetPath, ...(options.commits === undefined ? {} : { commits: options.commits }) });
  const { location, record } = await readCheckpoint(settings.checkpoint, key, { contract, targetPath });
  const described = describeTarget(resolveLakeConfig(contract, { targetPath }));
  // The lake's newest batch of this stream, when its commits name it.
  const held = lake.commits.filter((c) => c.streamKey === key).reduce<number | undefined>((n, c) => Math.max(n ?? 0, c.batchId), undefined);
  // A lake that records no counts for its commits (duckdb) has them in the stream's checkpoint.
  const commits = lake.commits.map((c) =>
    c.good === null && record !== undefined && c.streamKey === key && c.batchId === record.batchId ? { ...c, good: record.batch.goodCount } : c,
  );
  return {
    dataset: contract.dataset,
    table: described.table,
    location: described.location,
    ...lake,
    commits,
    checkpoint: checkpointView(key, location, record, held),
  };
}
