/**
 * The end-of-run audit of one chaos stream: the merge target against the produced events, the
 * quarantine against the produced poison, and the checkpoint totals against both.
 */
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import type { CheckpointRecord } from "../../src/checkpoint/types.js";
import { loadContract } from "../../src/contract/index.js";
import { openLake, readQuarantine, readTable } from "../../src/lake/index.js";
import { keyOfStoredId, type Dataset } from "./dataset.js";

export interface StreamAudit {
  /** Produced keys missing from the target, or holding another than their last good event. */
  lost: number;
  /** Target rows beyond one per key, plus quarantine rows beyond one per poison record. */
  duplicated: number;
  /** Poison records missing from quarantine, and quarantine rows that are not produced poison. */
  quarantineMismatch: number;
  reconciled: boolean;
  totals: CheckpointRecord["totals"] | null;
  problems: string[];
}

/**
 * The tag of a quarantine row: from its record, or (decode failures) from its raw payload —
 * stored as base64 when the source delivered bytes (Kafka, Pub/Sub).
 */
function quarantineTag(q: { record: unknown; raw: string | null; rawEncoding: string | null }): string | undefined {
  const rec = q.record as { tag?: unknown } | undefined;
  if (rec && typeof rec.tag === "string") return rec.tag;
  const text = q.raw !== null && q.rawEncoding === "base64" ? Buffer.from(q.raw, "base64").toString("utf8") : (q.raw ?? "");
  return /\be\d+\b/.exec(text)?.[0];
}

/** Where a stream's lake and checkpoint live, and the environment that reaches them. */
export interface StreamLocation {
  contract: string;
  lake: string;
  /** A SQLite file on this host, or "target": the lake's own commits. */
  checkpoint: string;
  key: string;
  /** Set in this process before the lake is opened (a DuckLake's catalog, DUCKLAKE_METADATA). */
  lakeEnv: Record<string, string>;
}

/**
 * Run `open` with the stream's lake environment in place. The lake's location is resolved in the
 * synchronous start of openLake/readTable, so streams of different catalogs can be read at once.
 */
export function inLakeEnv<T>(s: Pick<StreamLocation, "lakeEnv">, open: () => Promise<T>): Promise<T> {
  Object.assign(process.env, s.lakeEnv);
  return open();
}

export async function loadCheckpoint(s: StreamLocation): Promise<CheckpointRecord | null> {
  if (s.checkpoint === "target") {
    // From the lake itself: what every machine sees, not a file of this host.
    const contract = await loadContract(s.contract);
    const lake = await inLakeEnv(s, () => openLake(contract, { targetPath: s.lake }));
    try {
      return (await lake.checkpointStore!().load(s.key)) ?? null;
    } finally {
      await lake.close();
    }
  }
  const store = new SQLiteCheckpointStore(s.checkpoint);
  try {
    return (await store.load(s.key)) ?? null;
  } finally {
    await store.close();
  }
}

/**
 * Ordered sources must end on each key's last good event. An SQS or Pub/Sub queue does not keep
 * order (a killed batch is redelivered after later messages), so there the row must be one of
 * the key's good events — which one is the queue's order, not LakeLogic's.
 */
function auditTarget(rows: Array<Record<string, unknown>>, data: Dataset, ordered: boolean, problems: string[]): { lost: number; duplicated: number } {
  const byId = new Map<number, Array<Record<string, unknown>>>();
  for (const r of rows) byId.set(keyOfStoredId(r.id), [...(byId.get(keyOfStoredId(r.id)) ?? []), r]);
  let lost = 0;
  let duplicated = 0;
  for (const [id, want] of data.lastGood) {
    const got = byId.get(id) ?? [];
    if (got.length > 1) duplicated += got.length - 1;
    const wrong = (r: Record<string, unknown>) =>
      ordered ? r.tag !== want.tag || Number(r.version) !== want.version : !data.goodTags.get(id)!.has(String(r.tag));
    if (got.length === 0 || got.some(wrong)) {
      lost++;
      if (problems.length < 20) problems.push(`key ${id}: want ${want.tag} v${want.version}, got ${JSON.stringify(got.map((r) => r.tag))}`);
    }
  }
  for (const id of byId.keys()) {
    if (!data.lastGood.has(id)) {
      duplicated += byId.get(id)!.length;
      if (problems.length < 20) problems.push(`key ${id} in the target was never produced as a good event`);
    }
  }
  return { lost, duplicated };
}

export interface AuditTarget extends StreamLocation {
  data: Dataset;
  /** The source replays from a cursor: totals equal what was produced. Queues may count a redelivery twice. */
  exactTotals: boolean;
  ordered: boolean;
}

/** Audit a drained stream. */
export async function auditStream(s: AuditTarget): Promise<StreamAudit> {
  const { data, exactTotals } = s;
  const contract = await loadContract(s.contract);
  const problems: string[] = [];
  const { lost, duplicated: dupRows } = auditTarget(await inLakeEnv(s, () => readTable(contract, { targetPath: s.lake })), data, s.ordered, problems);
  let duplicated = dupRows;
  const quarantine = await inLakeEnv(s, () => readQuarantine(contract, { targetPath: s.lake }));
  const tags = new Map<string, number>();
  for (const q of quarantine) {
    const tag = quarantineTag(q) ?? `?${q.quarantineId}`;
    tags.set(tag, (tags.get(tag) ?? 0) + 1);
  }
  if (new Set(quarantine.map((q) => q.quarantineId)).size !== quarantine.length) problems.push("quarantine ids are not unique");
  let quarantineMismatch = 0;
  for (const [tag, n] of tags) {
    if (n > 1) duplicated += n - 1;
    if (!data.poisonTags.has(tag)) quarantineMismatch++;
  }
  for (const tag of data.poisonTags) if (!tags.has(tag)) quarantineMismatch++;
  if (quarantineMismatch > 0) problems.push(`quarantine differs from the produced poison in ${quarantineMismatch} records`);

  const rec = await loadCheckpoint(s);
  const t = rec?.totals ?? null;
  const produced = data.items.length;
  let reconciled = t !== null && t.sourceCount === t.goodCount + t.badCount + t.supersededCount && t.sourceCount >= produced;
  if (reconciled && exactTotals && t) {
    reconciled = t.sourceCount === produced && t.badCount === data.poisonTags.size && t.goodCount + t.supersededCount === data.goodEvents;
  }
  if (!reconciled) problems.push(`checkpoint totals ${JSON.stringify(t)} do not reconcile with ${produced} produced (${data.poisonTags.size} poison)`);
  return { lost, duplicated, quarantineMismatch, reconciled, totals: t, problems };
}
