/**
 * Looking at a contract's lake (`lakelogic show`): its tables, the batches its commits record, its
 * quarantine grouped by rule, and a checkpoint kept in the lake. One function per need, each
 * reading what the format's writer stores (docs/lake.md):
 *
 * - duckdb: the tables of `lakelogic.duckdb`; `_lakelogic_commits` (the newest batch per stream)
 *   and `_lakelogic_checkpoints`. DuckDB lets one process open the file: a running stream's lake
 *   is refused with LakeBusyError naming the process and how to look anyway.
 * - parquet: the manifest: its files (rows per batch) and `commits` (the newest batch per stream).
 * - delta: the Delta log through the helper: columns, row count, the commits carrying LakeLogic's
 *   metadata (batch, stream key, checkpoint).
 * - ducklake: the catalog: the tables, and every version of `_lakelogic_streams` (one per batch)
 *   from DuckLake's change feed.
 *
 * Delta, parquet and a DuckLake on a PostgreSQL catalog are read beside a running writer, which
 * they never block.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance, type DuckDBConnection } from "../util/duckdb.js";
import type { CheckpointRecord } from "../checkpoint/types.js";
import type { Contract, LakeFormat } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import { redactText } from "../util/redact.js";
import { quoteIdent, quoteString } from "../util/sql-text.js";
import { CHECKPOINT_TABLE, DUCKDB_FILE, joinLocation, quarantineLocationOf, resolveLakeConfig, type LakeConfig } from "./config.js";
import { COMMITS_TABLE } from "./commit-log.js";
import { DeltaHelper } from "./delta-helper.js";
import { loadDeltaHeld, storageOptions } from "./delta-writer.js";
import { loadCheckpoint } from "./duckdb-checkpoint.js";
import { listedFiles, quarantineListingTable } from "./duckdb-quarantine-files.js";
import { attachDuckLake, LAKE_ALIAS, lakeTable, sharedCatalog, type AttachedLake } from "./ducklake-catalog.js";
import { describeDuckLake, loadDuckLakeHeld, STREAMS_TABLE } from "./ducklake-writer.js";
import { LakeBusyError } from "./errors.js";
import { quarantineDir, readManifest, sqlList, tableDir, type ManifestFile } from "./parquet-writer.js";
import { readAll, tableExists, withDuckDB, type ReadOptions } from "./read.js";
import { TableCheckpointStore, type DeltaCommitMeta, type EncodedCheckpoint } from "./table-checkpoint.js";
import { withQuarantine, type QuarantineGroup } from "./inspect-quarantine.js";

export type { QuarantineGroup } from "./inspect-quarantine.js";

export interface InspectOptions extends ReadOptions {
  /** How many of the newest commits to list. Default 10. */
  commits?: number;
}

export interface InspectedColumn {
  name: string;
  type: string;
}

/** A table of the lake: the contract's table, or its quarantine. */
export interface InspectedTable {
  role: "table" | "quarantine";
  name: string;
  /** Where it is: a directory, a database file, a URI, or a DuckLake catalog (no credentials). */
  location: string;
  /** False until the first batch made it. */
  exists: boolean;
  columns: InspectedColumn[];
  rows: number;
}

/** A batch the lake's commits record, newest first. */
export interface InspectedCommit {
  batchId: number;
  /** The checkpoint key of the stream that wrote it; null for a write outside a stream. */
  streamKey: string | null;
  /** ISO-8601 UTC; null when the format keeps no time for it. */
  committedAt: string | null;
  /** Good rows the batch wrote; null when the lake does not record it. */
  good: number | null;
  /** Bad rows of the batch: its checkpoint's count, else the quarantine rows stored under its batch id. */
  quarantined: number | null;
  /** delta: the table version of the commit; ducklake: its snapshot id. */
  version?: number;
}

export interface LakeInspection {
  format: LakeFormat;
  tables: InspectedTable[];
  /** Newest first, at most `commits` (InspectOptions). */
  commits: InspectedCommit[];
  quarantine: { rows: number; groups: QuarantineGroup[] };
}

const DEFAULT_COMMITS = 10;

/** A contract's lake as it is now: its tables, its newest commits and its quarantine by rule. */
export async function inspectLake(contract: Contract, options: InspectOptions = {}): Promise<LakeInspection> {
  const config = resolveLakeConfig(contract, options);
  const limit = options.commits ?? DEFAULT_COMMITS;
  if (!Number.isInteger(limit) || limit < 0) throw new ConfigError("commits", `expected a whole number >= 0; got ${JSON.stringify(limit)}`);
  let found: Omit<LakeInspection, "format">;
  if (config.format === "duckdb") found = await inspectDuckDB(config, limit);
  else if (config.format === "parquet") found = await inspectParquet(config, limit);
  else if (config.format === "delta") found = await inspectDelta(config, limit);
  else found = await inspectDuckLake(config, limit);
  return { format: config.format, ...found };
}

/**
 * The checkpoint of stream `key` that the lake keeps itself (`checkpoint: "target"`): the
 * duckdb lake's checkpoint table, the Delta commit that set the stream's transaction version,
 * the stream's row in a DuckLake catalog. Undefined when the lake holds none.
 */
export async function readTargetCheckpoint(contract: Contract, key: string, options: ReadOptions = {}): Promise<CheckpointRecord | undefined> {
  const config = resolveLakeConfig(contract, options);
  if (config.format === "duckdb") {
    const file = join(config.targetPath, DUCKDB_FILE);
    return busyExplained(file, () =>
      withDuckDB(config, undefined, async (conn) =>
        (await tableExists(conn, CHECKPOINT_TABLE)) ? loadCheckpoint(conn, key, `${file} (${CHECKPOINT_TABLE})`) : undefined,
      ),
    );
  }
  if (config.format === "delta") {
    const uri = joinLocation(config.targetPath, config.table);
    const helper = DeltaHelper.start();
    try {
      // The store's own reading: a batch whose commit lost its checkpoint is CHECKPOINT_MISSING.
      return await readOnlyStore(uri, () => loadDeltaHeld(helper, uri, key)).load(key);
    } finally {
      await helper.close();
    }
  }
  if (config.format === "ducklake") {
    const where = describeDuckLake(config.ducklake!);
    return withDuckLake(config, undefined, async (conn) =>
      (await duckLakeTableExists(conn, "main", STREAMS_TABLE)) ? readOnlyStore(where, () => loadDuckLakeHeld(conn, key, where)).load(key) : undefined,
    );
  }
  throw new ConfigError("checkpoint", `"target" keeps the cursor in the lake's own commits; a parquet lake keeps none (its stream's checkpoint is a SQLite file or an object-store location)`);
}

function readOnlyStore(location: string, held: () => Promise<{ batchId: number; record?: CheckpointRecord } | undefined>): TableCheckpointStore {
  return new TableCheckpointStore(location, held, () => Promise.reject(new Error("a lake opened to be read takes no commit")));
}

async function columnsOf(conn: DuckDBConnection, database: string | undefined, schema: string, name: string): Promise<InspectedColumn[]> {
  const db = database === undefined ? "current_database()" : quoteString(database);
  const rows = await readAll(
    conn,
    `SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = ${db} AND schema_name = ${quoteString(schema)} AND table_name = ${quoteString(name)} ORDER BY column_index`,
  );
  return rows.map((r) => ({ name: String(r["column_name"]), type: String(r["data_type"]) }));
}

async function countOf(conn: DuckDBConnection, relation: string): Promise<number> {
  const [row] = await readAll(conn, `SELECT count(*) AS n FROM ${relation}`);
  return Number(row?.["n"] ?? 0);
}

function absent(role: InspectedTable["role"], name: string, location: string): InspectedTable {
  return { role, name, location, exists: false, columns: [], rows: 0 };
}

async function memoryConnection(): Promise<DuckDBConnection> {
  // A throwaway instance, left to the garbage collector (duckdb-db.ts says why none is closed).
  return (await DuckDBInstance.create(":memory:")).connect();
}

// ── duckdb ──

/** `read` on the lake's DuckDB file, a lock held by another process said as what to do about it. */
async function busyExplained<T>(file: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (e) {
    if (!(e instanceof LakeBusyError)) throw e;
    const who = e.holder ? `process ${e.holder.pid} (${e.holder.program})` : "another process";
    throw new LakeBusyError(
      `the DuckDB lake file ${file} is locked by ${who}, most likely a stream writing it: DuckDB lets one process open ` +
        "a database file, even to read it. To look anyway, stop the stream (it resumes from its checkpoint), or copy " +
        `${DUCKDB_FILE} and ${DUCKDB_FILE}.wal (if present) into another directory and read the copy there (--target-path). ` +
        "A lake that is read while a stream writes it should be parquet, delta or ducklake",
    );
  }
}

async function inspectDuckDB(config: LakeConfig, limit: number): Promise<Omit<LakeInspection, "format">> {
  const file = join(config.targetPath, DUCKDB_FILE);
  const qdir = config.quarantine.dir;
  const qname = config.quarantine.target;
  const tableAt = `${file} (main.${config.table})`;
  const quarantineAt = qdir ?? `${file} (main.${qname})`;
  const none = { tables: [absent("table", config.table, tableAt), absent("quarantine", qname, quarantineAt)], commits: [], quarantine: { rows: 0, groups: [] } };
  return busyExplained(file, () =>
    withDuckDB(config, none, async (conn) => {
      const tables: InspectedTable[] = [];
      if (await tableExists(conn, config.table)) {
        const columns = await columnsOf(conn, undefined, "main", config.table);
        tables.push({ role: "table", name: config.table, location: tableAt, exists: true, columns, rows: await countOf(conn, quoteIdent(config.table)) });
      } else tables.push(absent("table", config.table, tableAt));
      let relation: string | undefined;
      if (qdir !== undefined) {
        const files = (await tableExists(conn, quarantineListingTable(config.table))) ? (await listedFiles(conn, config.table)).map((f) => join(qdir, f)) : [];
        relation = files.length > 0 ? `read_parquet(${sqlList(files)}, union_by_name = true)` : undefined;
      } else if (await tableExists(conn, qname)) relation = quoteIdent(qname);
      tables.push(
        relation === undefined
          ? absent("quarantine", qname, quarantineAt)
          : { role: "quarantine", name: qname, location: quarantineAt, exists: true, columns: await relationColumns(conn, relation), rows: 0 },
      );
      const commits = await duckdbCommits(conn, config.table, limit);
      const found = await withQuarantine(conn, relation, commits);
      tables[1]!.rows = found.quarantine.rows;
      return { tables, ...found };
    }),
  );
}

/** The columns of any relation, by DESCRIBE. */
async function relationColumns(conn: DuckDBConnection, relation: string): Promise<InspectedColumn[]> {
  const rows = await readAll(conn, `DESCRIBE SELECT * FROM ${relation}`);
  return rows.map((r) => ({ name: String(r["column_name"]), type: String(r["column_type"]) }));
}

/**
 * A duckdb lake records the newest batch per stream (`_lakelogic_commits`); its counts come from
 * the checkpoint committed with it when the stream keeps its checkpoint in the lake.
 */
async function duckdbCommits(conn: DuckDBConnection, table: string, limit: number): Promise<InspectedCommit[]> {
  if (limit === 0 || !(await tableExists(conn, COMMITS_TABLE))) return [];
  const checkpoints = await tableExists(conn, CHECKPOINT_TABLE);
  const counts = checkpoints ? "c.batch_good AS good, c.batch_bad AS bad" : "NULL AS good, NULL AS bad";
  const join_ = checkpoints ? `LEFT JOIN ${quoteIdent(CHECKPOINT_TABLE)} AS c ON c.key = m.stream_key AND c.batch_id = m.batch_id` : "";
  const rows = await readAll(
    conn,
    `SELECT m.stream_key, m.batch_id, m.written_at, ${counts} FROM ${quoteIdent(COMMITS_TABLE)} AS m ${join_}
     WHERE m.table_name = ${quoteString(table)} ORDER BY m.written_at DESC, m.stream_key LIMIT ${limit}`,
  );
  return rows.map((r) => ({
    batchId: Number(r["batch_id"]),
    streamKey: String(r["stream_key"]),
    committedAt: isoOrNull(r["written_at"]),
    good: numberOrNull(r["good"]),
    quarantined: numberOrNull(r["bad"]),
  }));
}

// ── parquet ──

async function inspectParquet(config: LakeConfig, limit: number): Promise<Omit<LakeInspection, "format">> {
  const dir = tableDir(config);
  const qdir = quarantineDir(config);
  const manifest = readManifest(config);
  if (!manifest) {
    return { tables: [absent("table", config.table, dir), absent("quarantine", config.quarantine.target, qdir)], commits: [], quarantine: { rows: 0, groups: [] } };
  }
  const sum = (files: readonly ManifestFile[]) => files.reduce((n, f) => n + f.rows, 0);
  const conn = await memoryConnection();
  const qfiles = manifest.quarantine.map((f) => join(qdir, f.file));
  const relation = qfiles.length > 0 ? `read_parquet(${sqlList(qfiles)}, union_by_name = true)` : undefined;
  const tables: InspectedTable[] = [
    { role: "table", name: config.table, location: dir, exists: true, columns: manifest.contract?.columns ?? [], rows: sum(manifest.data) },
    relation === undefined
      ? absent("quarantine", config.quarantine.target, qdir)
      : { role: "quarantine", name: config.quarantine.target, location: qdir, exists: true, columns: await relationColumns(conn, relation), rows: sum(manifest.quarantine) },
  ];
  return { tables, ...(await withQuarantine(conn, relation, parquetCommits(config, manifest, limit))) };
}

/**
 * The batches whose files the manifest lists, newest first: the good rows of the file each batch
 * added (a merge's rewrite of older files, `-m`, is not counted as its rows), the time its newest
 * file was written, and the stream whose newest batch it is (`commits`).
 */
function parquetCommits(config: LakeConfig, manifest: NonNullable<ReturnType<typeof readManifest>>, limit: number): InspectedCommit[] {
  const batches = new Map<number, { good: number; mtime: number }>();
  const note = (f: ManifestFile, dir: string, good: number) => {
    const b = batches.get(f.batchId) ?? { good: 0, mtime: 0 };
    b.good += good;
    const at = statSync(join(dir, f.file), { throwIfNoEntry: false })?.mtimeMs ?? 0;
    b.mtime = Math.max(b.mtime, at);
    batches.set(f.batchId, b);
  };
  for (const f of manifest.data) note(f, tableDir(config), f.file.endsWith("-m.parquet") ? 0 : f.rows);
  for (const f of manifest.quarantine) note(f, quarantineDir(config), 0);
  const keyOf = new Map(Object.entries(manifest.commits ?? {}).map(([key, c]) => [c.batchId, key]));
  for (const c of Object.values(manifest.commits ?? {})) if (!batches.has(c.batchId)) batches.set(c.batchId, { good: 0, mtime: 0 });
  const newest = Math.max(0, ...batches.keys());
  return [...batches.entries()]
    .sort((a, b) => b[0] - a[0])
    .slice(0, limit)
    .map(([batchId, b]) => ({
      batchId,
      streamKey: keyOf.get(batchId) ?? null,
      committedAt: batchId === newest ? manifest.updatedAt : b.mtime > 0 ? new Date(b.mtime).toISOString() : null,
      good: b.good,
      quarantined: null,
    }));
}

// ── delta ──

interface DeltaInspectReply {
  exists: boolean;
  columns?: InspectedColumn[];
  rows?: number;
  commits?: Array<{ version: number; timestamp: number | null; operation: string | null; meta: DeltaCommitMeta; metrics: Record<string, number> }>;
}

const QUARANTINE_READ = ["quarantine_id", "batch_id", "record", "raw", "raw_encoding", "reasons", "rule_ids"];

async function inspectDelta(config: LakeConfig, limit: number): Promise<Omit<LakeInspection, "format">> {
  const uri = joinLocation(config.targetPath, config.table);
  const quri = quarantineLocationOf(config);
  const helper = DeltaHelper.start();
  const dir = mkdtempSync(join(tmpdir(), "lakelogic-delta-inspect-"));
  try {
    const table = await helper.request<DeltaInspectReply>("inspect", { uri, storage: storageOptions(uri), commits: limit });
    const quarantine = await helper.request<DeltaInspectReply>("inspect", { uri: quri, storage: storageOptions(quri), commits: 0 });
    let relation: string | undefined;
    let conn: DuckDBConnection | undefined;
    if (quarantine.exists) {
      const out = join(dir, "quarantine.parquet");
      await helper.request("read", { uri: quri, storage: storageOptions(quri), out, columns: QUARANTINE_READ });
      conn = await memoryConnection();
      relation = `read_parquet(${quoteString(out)})`;
    }
    const tables: InspectedTable[] = [deltaTable("table", config.table, uri, table), deltaTable("quarantine", config.quarantine.target, quri, quarantine)];
    const commits: InspectedCommit[] = (table.commits ?? []).map((c) => ({
      batchId: c.meta.batchId,
      streamKey: c.meta.key ?? null,
      committedAt: c.timestamp === null ? null : new Date(c.timestamp).toISOString(),
      good: c.meta.checkpoint?.batch.goodCount ?? deltaRowsWritten(c.operation, c.metrics),
      quarantined: c.meta.checkpoint?.batch.badCount ?? null,
      version: c.version,
    }));
    return { tables, ...(await withQuarantine(conn, relation, commits)) };
  } finally {
    await helper.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function deltaTable(role: InspectedTable["role"], name: string, uri: string, reply: DeltaInspectReply): InspectedTable {
  const location = redactText(uri);
  return reply.exists ? { role, name, location, exists: true, columns: reply.columns ?? [], rows: reply.rows ?? 0 } : absent(role, name, location);
}

/** The good rows a commit without a checkpoint wrote, from delta-rs's operation metrics. */
function deltaRowsWritten(operation: string | null, metrics: Record<string, number>): number | null {
  if (operation === "MERGE") return (metrics["num_target_rows_inserted"] ?? 0) + (metrics["num_target_rows_updated"] ?? 0);
  return metrics["num_added_rows"] ?? null;
}

// ── ducklake ──

/** `read` with the DuckLake attached; `none` when its catalog file does not exist yet. */
async function withDuckLake<T>(config: LakeConfig, none: T, read: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
  const location = config.ducklake!;
  if (!sharedCatalog(location) && !existsSync(location.catalog)) return none;
  let lake: AttachedLake;
  try {
    lake = await attachDuckLake(location);
  } catch (e) {
    if (!sharedCatalog(location) && /lock/i.test((e as Error).message)) {
      throw new LakeBusyError(
        `the DuckLake catalog file ${location.catalog} is locked by another process, most likely a stream writing it: a catalog ` +
          "file takes one process at a time. Stop the stream to look, or give the lake a PostgreSQL catalog, which readers share with writers",
      );
    }
    throw e;
  }
  try {
    return await lake.exclusive(() => read(lake.conn));
  } finally {
    await lake.release();
  }
}

async function duckLakeTableExists(conn: DuckDBConnection, schema: string, name: string): Promise<boolean> {
  const found = await conn.runAndReadAll("SELECT 1 FROM duckdb_tables() WHERE database_name = $1 AND schema_name = $2 AND table_name = $3", [LAKE_ALIAS, schema, name]);
  return found.currentRowCount > 0;
}

async function inspectDuckLake(config: LakeConfig, limit: number): Promise<Omit<LakeInspection, "format">> {
  const location = config.ducklake!;
  const where = describeDuckLake(location).replace(/^the DuckLake /, "");
  const at = (name: string) => `${where}: ${location.schema}.${name}`;
  const qname = config.quarantine.target;
  const none = { tables: [absent("table", config.table, at(config.table)), absent("quarantine", qname, at(qname))], commits: [], quarantine: { rows: 0, groups: [] } };
  return withDuckLake(config, none, async (conn) => {
    const tables: InspectedTable[] = [];
    for (const [role, name] of [["table", config.table], ["quarantine", qname]] as const) {
      if (await duckLakeTableExists(conn, location.schema, name)) {
        const relation = lakeTable(location, name);
        tables.push({ role, name, location: at(name), exists: true, columns: await columnsOf(conn, LAKE_ALIAS, location.schema, name), rows: await countOf(conn, relation) });
      } else tables.push(absent(role, name, at(name)));
    }
    const relation = tables[1]!.exists ? lakeTable(location, qname) : undefined;
    const commits = (await duckLakeTableExists(conn, "main", STREAMS_TABLE)) ? await duckLakeCommits(conn, config.table, limit) : [];
    return { tables, ...(await withQuarantine(conn, relation, commits)) };
  });
}

/**
 * Every batch replaces its stream's row in `_lakelogic_streams` in the batch's transaction, so
 * the versions of that row DuckLake's change feed gives are the batches, each with its snapshot.
 * Only the newest snapshots are read (a few per batch listed); a catalog whose older snapshots
 * were expired still has the current row of each stream.
 */
async function duckLakeCommits(conn: DuckDBConnection, table: string, limit: number): Promise<InspectedCommit[]> {
  if (limit === 0) return [];
  const streams = `${LAKE_ALIAS}.main.${quoteIdent(STREAMS_TABLE)}`;
  const [current] = await readAll(conn, `SELECT max(snapshot_id) AS id FROM ducklake_snapshots(${quoteString(LAKE_ALIAS)})`);
  const end = Number(current?.["id"] ?? 0);
  const start = Math.max(0, end - 8 * limit);
  const columns = "stream_key, batch_id, checkpoint, committed_at";
  let rows;
  try {
    rows = await readAll(
      conn,
      `SELECT snapshot_id, ${columns} FROM ducklake_table_changes(${quoteString(LAKE_ALIAS)}, 'main', ${quoteString(STREAMS_TABLE)}, ${start}, ${end})
       WHERE change_type IN ('insert', 'update_postimage') AND table_name = ${quoteString(table)} AND batch_id > 0
       ORDER BY snapshot_id DESC, stream_key LIMIT ${limit}`,
    );
  } catch {
    rows = await readAll(conn, `SELECT NULL AS snapshot_id, ${columns} FROM ${streams} WHERE table_name = ${quoteString(table)} AND batch_id > 0 ORDER BY committed_at DESC LIMIT ${limit}`);
  }
  return rows.map((r) => {
    const checkpoint = typeof r["checkpoint"] === "string" ? (JSON.parse(r["checkpoint"]) as EncodedCheckpoint) : undefined;
    return {
      batchId: Number(r["batch_id"]),
      streamKey: String(r["stream_key"]),
      committedAt: isoOrNull(r["committed_at"]),
      good: checkpoint?.batch.goodCount ?? null,
      quarantined: checkpoint?.batch.badCount ?? null,
      ...(r["snapshot_id"] === null ? {} : { version: Number(r["snapshot_id"]) }),
    };
  });
}

function numberOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}

function isoOrNull(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}
