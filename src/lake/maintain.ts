/**
 * Lake maintenance (`lakelogic lake maintain`, the scheduled maintenance workflow): what keeps a
 * table that a stream writes in small batches from growing its file count without bound. Per
 * format (docs/lake.md, "Small files and maintenance"):
 *
 * - delta: compaction (delta-rs `optimize.compact`), vacuum of files unreferenced for longer than
 *   the retention, a Delta checkpoint; for the table and its quarantine table. Each step is its
 *   own optimistic commit, so a stream's merge racing it either wins (the compaction is planned
 *   again on the re-read table) or commits on top of it (the stream's own commit retries): no
 *   commit of the stream is lost. The log is never cleaned up: a stream's checkpoint is the
 *   metadata of the commit that set its transaction version.
 * - duckdb: a `CHECKPOINT` of the database file (its WAL folded in); rows live in the one file.
 * - parquet: nothing to do beyond what every writer does at open (files no manifest lists are
 *   removed); the report gives the file counts.
 * - ducklake: inlined rows flushed to Parquet files, adjacent files merged, snapshots older than
 *   the retention expired and the files only they referenced deleted — DuckLake's own functions,
 *   each a catalog transaction: one that loses to a stream's commit is run again (the stream's
 *   commit stands), a stream's commit that loses to it is retried by the writer.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Contract, LakeFormat } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import { redactText } from "../util/redact.js";
import { quoteString } from "../util/sql-text.js";
import { DUCKDB_FILE, joinLocation, quarantineLocationOf, resolveLakeConfig, type LakeConfig } from "./config.js";
import { DeltaHelper } from "./delta-helper.js";
import { storageOptions } from "./delta-writer.js";
import { acquireDatabase } from "./duckdb-db.js";
import { attachDuckLake, isConflict, LAKE_ALIAS, sharedCatalog, withConflictRetry } from "./ducklake-catalog.js";
import { LakeWriteError } from "./errors.js";
import { quarantineDir, readManifest, tableDir } from "./parquet-writer.js";

/** Delta's default `delta.deletedFileRetentionDuration`: vacuum keeps a week of removed files. */
export const DEFAULT_RETAIN_HOURS = 168;
/**
 * The shortest DuckLake retention accepted without `allowShortRetention`: expiring snapshots and
 * deleting their files under a transaction still reading them (a stream's batch, a reader) fails
 * that transaction with a missing file — seen here with a retention of 0 beside a running stream.
 */
export const DUCKLAKE_MIN_RETAIN_HOURS = 1;

export interface MaintainOptions {
  /** Lake directory; overrides `materialization.target_path`. */
  targetPath?: string;
  /**
   * delta: vacuum deletes files no snapshot newer than this many (whole) hours still reads. Default 168
   * (Delta's). Below the table's `delta.deletedFileRetentionDuration` it is refused unless
   * `allowShortRetention`.
   */
  retainHours?: number;
  /**
   * delta, ducklake: accept a retention below the table's minimum (ducklake: DUCKLAKE_MIN_RETAIN_HOURS). A reader or writer still working on an
   * older snapshot then may find its files gone; only for tables nothing reads while it runs.
   */
  allowShortRetention?: boolean;
  /** delta: how often a compaction that lost its commit to a concurrent writer is planned again. Default 10. */
  maxCompactAttempts?: number;
}

/** The live files of a table: what its readers open. */
export interface FileStats {
  files: number;
  bytes: number;
  /** delta: the table version. */
  version?: number;
}

export type MaintenanceStep =
  | {
      kind: "compact";
      /** `gave-up`: every attempt lost its commit to a concurrent writer; the next run tries again. */
      status: "done" | "gave-up";
      attempts: number;
      filesRemoved: number;
      filesAdded: number;
    }
  | { kind: "vacuum"; status: "done" | "gave-up"; retainHours: number; filesDeleted: number }
  | { kind: "checkpoint"; status: "done"; version: number }
  | { kind: "duckdb-checkpoint"; status: "done" }
  | { kind: "flush-inlined"; status: "done" | "gave-up" }
  | { kind: "expire-snapshots"; status: "done" | "gave-up"; retainHours: number; snapshotsExpired: number }
  | { kind: "none"; status: "done"; reason: string };

export interface TableMaintenance {
  /** The table's name, or the quarantine's target. */
  name: string;
  role: "table" | "quarantine";
  location: string;
  /** False when nothing was written there yet (nothing was done). */
  exists: boolean;
  before: FileStats;
  after: FileStats;
  steps: MaintenanceStep[];
}

export interface MaintainReport {
  format: LakeFormat;
  targetPath: string;
  tables: TableMaintenance[];
  /** False when a step gave up (lost to concurrent writers every time): run it again later. */
  complete: boolean;
}

/** Maintain the contract's table and its quarantine, as its lake format needs. */
export async function maintainLake(contract: Contract, options: MaintainOptions = {}): Promise<MaintainReport> {
  const config = resolveLakeConfig(contract, options.targetPath === undefined ? {} : { targetPath: options.targetPath });
  const retainHours = options.retainHours ?? DEFAULT_RETAIN_HOURS;
  // delta-rs takes whole hours.
  if (!Number.isInteger(retainHours) || retainHours < 0) {
    throw new ConfigError("retainHours", `expected a whole number of hours >= 0 (got ${retainHours})`);
  }
  const format: LakeFormat = config.format;
  let tables: TableMaintenance[];
  switch (format) {
    case "delta":
      tables = await maintainDelta(config, { ...options, retainHours });
      break;
    case "duckdb":
      tables = [await maintainDuckDB(config)];
      break;
    case "parquet":
      tables = reportParquet(config);
      break;
    case "ducklake":
      tables = await maintainDuckLake(config, { ...options, retainHours });
      break;
    default:
      tables = notYet(format);
  }
  const complete = tables.every((t) => t.steps.every((s) => s.status === "done"));
  return { format: config.format, targetPath: config.targetPath, tables, complete };
}

/**
 * A format this switch does not handle yet. While every LakeFormat has a case, `format` is
 * `never` here and a new format fails to compile until it gets one (or is routed here on purpose).
 */
function notYet(format: never): never {
  throw new ConfigError("materialization.format", `lake maintenance does not support format "${String(format)}" yet`);
}

interface DeltaReply {
  exists: boolean;
  refused?: string;
  before?: FileStats;
  after?: FileStats;
  steps?: MaintenanceStep[];
}

async function maintainDelta(config: LakeConfig, options: MaintainOptions & { retainHours: number }): Promise<TableMaintenance[]> {
  const targets: Array<Pick<TableMaintenance, "name" | "role" | "location">> = [
    { name: config.table, role: "table", location: joinLocation(config.targetPath, config.table) },
  ];
  if (config.quarantine.enabled) {
    const location = quarantineLocationOf(config);
    targets.push({ name: config.quarantine.target, role: "quarantine", location });
  }
  const helper = DeltaHelper.start();
  try {
    const out: TableMaintenance[] = [];
    for (const t of targets) {
      const reply = await helper.request<DeltaReply>("maintain", {
        uri: t.location,
        storage: storageOptions(t.location),
        retainHours: options.retainHours,
        allowShortRetention: options.allowShortRetention === true,
        maxAttempts: options.maxCompactAttempts ?? 10,
      });
      if (reply.refused !== undefined) {
        throw new ConfigError(
          "retainHours",
          `${t.location}: ${reply.refused}. A shorter retention can delete files that a reader or a stream's merge still ` +
            "working on an older snapshot needs; give a retention at least the table's minimum, or pass --allow-short-retention " +
            "(allowShortRetention) for a table nothing reads or writes while maintenance runs",
        );
      }
      if (!reply.exists) {
        out.push({ ...t, exists: false, before: { files: 0, bytes: 0 }, after: { files: 0, bytes: 0 }, steps: [] });
        continue;
      }
      out.push({ ...t, exists: true, before: reply.before!, after: reply.after!, steps: reply.steps ?? [] });
    }
    return out;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new LakeWriteError(`maintenance of the Delta tables under ${config.targetPath} failed: ${(e as Error).message}`, { cause: e, retriable: true });
  } finally {
    await helper.close();
  }
}

function sizeOf(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}

function duckdbStats(file: string): FileStats {
  const wal = `${file}.wal`;
  return { files: [file, wal].filter((f) => existsSync(f)).length, bytes: sizeOf(file) + sizeOf(wal) };
}

/**
 * DuckDB keeps every table's rows in its one database file: no small files accumulate. A
 * CHECKPOINT writes the WAL into the file (DuckDB also does so on its own past
 * `checkpoint_threshold`) and frees what deleted rows held.
 */
async function maintainDuckDB(config: LakeConfig): Promise<TableMaintenance> {
  const file = join(config.targetPath, DUCKDB_FILE);
  const base = { name: config.table, role: "table" as const, location: file };
  if (!existsSync(file)) return { ...base, exists: false, before: { files: 0, bytes: 0 }, after: { files: 0, bytes: 0 }, steps: [] };
  const before = duckdbStats(file);
  const db = await acquireDatabase(file);
  try {
    const conn = await db.connect();
    // Between write transactions of this process: a checkpoint waits for none of them.
    await db.exclusive(() => conn.run("CHECKPOINT"));
  } finally {
    db.release();
  }
  return { ...base, exists: true, before, after: duckdbStats(file), steps: [{ kind: "duckdb-checkpoint", status: "done" }] };
}

/**
 * A DuckLake's maintenance, with DuckLake's own functions (catalog-wide; the report gives this
 * contract's table and quarantine). Steps that lose to concurrent commits every time give up
 * (the run is incomplete; the next one tries again).
 */
async function maintainDuckLake(config: LakeConfig, options: MaintainOptions & { retainHours: number }): Promise<TableMaintenance[]> {
  const location = config.ducklake!;
  if (options.retainHours < DUCKLAKE_MIN_RETAIN_HOURS && options.allowShortRetention !== true) {
    throw new ConfigError(
      "retainHours",
      `${options.retainHours} h is below ${DUCKLAKE_MIN_RETAIN_HOURS} h: expiring snapshots that young deletes files a stream's batch or a ` +
        "reader may still be reading; give a retention of at least that, or pass --allow-short-retention (allowShortRetention) for a lake " +
        "nothing reads or writes while maintenance runs",
    );
  }
  const names = [{ name: config.table, role: "table" as const }, ...(config.quarantine.enabled ? [{ name: config.quarantine.target, role: "quarantine" as const }] : [])];
  const where = (name: string) => `${location.schema}.${name} in the DuckLake ${redactText(location.catalog)}`;
  // Attaching a catalog file that does not exist creates it: maintenance never makes a lake (and
  // would race the stream that is about to).
  if (!sharedCatalog(location) && !existsSync(location.catalog)) {
    return names.map((n) => ({ ...n, location: where(n.name), exists: false, before: { files: 0, bytes: 0 }, after: { files: 0, bytes: 0 }, steps: [] }));
  }
  const { conn, exclusive, release } = await attachDuckLake(location);
  const attempts = options.maxCompactAttempts ?? 10;
  const catalog = quoteString(LAKE_ALIAS);
  try {
    const exists = async (name: string) =>
      (await conn.runAndReadAll("SELECT 1 FROM duckdb_tables() WHERE database_name = $1 AND schema_name = $2 AND table_name = $3", [LAKE_ALIAS, location.schema, name])).currentRowCount > 0;
    const stats = async (name: string): Promise<FileStats> => {
      const r = (
        await conn.runAndReadAll(`SELECT count(*), coalesce(sum(data_file_size_bytes), 0) FROM ducklake_list_files(${catalog}, $1, schema => $2)`, [name, location.schema])
      ).getRows()[0]!;
      return { files: Number(r[0]), bytes: Number(r[1]) };
    };
    /** A step: done, or gave up after losing to concurrent commits `attempts` times. */
    const step = async <T>(fn: () => Promise<T>): Promise<{ status: "done"; value: T } | { status: "gave-up" }> => {
      try {
        // Each step on its own turn: on a catalog file, a stream's batches go on between steps.
        return { status: "done", value: await withConflictRetry(() => exclusive(fn), attempts) };
      } catch (e) {
        if (isConflict(e)) return { status: "gave-up" };
        throw e;
      }
    };
    const statsOf = (present: readonly boolean[]) => exclusive(() => Promise.all(names.map(async (n, i) => (present[i] ? stats(n.name) : { files: 0, bytes: 0 }))));
    const present = await exclusive(() => Promise.all(names.map((n) => exists(n.name))));
    const before = await statsOf(present);
    const older = `older_than => now() - INTERVAL ${options.retainHours} HOUR`;
    const flush = await step(() => conn.run(`CALL ducklake_flush_inlined_data(${catalog})`));
    const merged = await step(async () => (await conn.runAndReadAll(`CALL ducklake_merge_adjacent_files(${catalog})`)).getRowObjectsJS());
    const expired = await step(async () => (await conn.runAndReadAll(`CALL ducklake_expire_snapshots(${catalog}, ${older})`)).currentRowCount);
    const cleaned = await step(async () => (await conn.runAndReadAll(`CALL ducklake_cleanup_old_files(${catalog}, ${older})`)).currentRowCount);
    const after = await statsOf(present);
    return names.map((n, i) => {
      const row = merged.status === "done" ? merged.value.find((r) => r["schema_name"] === location.schema && r["table_name"] === n.name) : undefined;
      const steps: MaintenanceStep[] = [
        { kind: "flush-inlined", status: flush.status },
        { kind: "compact", status: merged.status, attempts, filesRemoved: Number(row?.["files_processed"] ?? 0), filesAdded: Number(row?.["files_created"] ?? 0) },
      ];
      // Snapshots and old files are the catalog's: reported once, with the table.
      if (n.role === "table") {
        steps.push(
          { kind: "expire-snapshots", status: expired.status, retainHours: options.retainHours, snapshotsExpired: expired.status === "done" ? expired.value : 0 },
          { kind: "vacuum", status: cleaned.status, retainHours: options.retainHours, filesDeleted: cleaned.status === "done" ? cleaned.value : 0 },
        );
      }
      return { ...n, location: where(n.name), exists: present[i]!, before: before[i]!, after: after[i]!, steps };
    });
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new LakeWriteError(`maintenance of the DuckLake ${redactText(location.catalog)} failed: ${redactText((e as Error).message)}`, { retriable: true });
  } finally {
    await release();
  }
}

function dirBytes(dir: string, files: readonly string[]): number {
  return files.reduce((sum, f) => sum + sizeOf(join(dir, f)), 0);
}

/** Parquet files on disk in `dir` (not the `_lakelogic` metadata). */
function parquetOnDisk(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".parquet")) : [];
}

/**
 * A parquet table gets a file per batch (a merge rewrites the files it touches into one), and the
 * writer removes replaced and unlisted files itself; compacting it is not offered here. The report
 * counts the files the manifest lists.
 */
function reportParquet(config: LakeConfig): TableMaintenance[] {
  const manifest = readManifest(config);
  const dir = tableDir(config);
  const qdir = quarantineDir(config);
  const reason = "parquet tables are not compacted: each batch adds one file, a merge rewrites the files it touches, and files no manifest lists are removed when a writer opens the table";
  const stats = (d: string, files: readonly string[]): FileStats => ({ files: files.length, bytes: dirBytes(d, files) });
  const data = manifest?.data.map((f) => f.file) ?? parquetOnDisk(dir);
  const quarantine = manifest?.quarantine.map((f) => f.file) ?? [];
  const out: TableMaintenance[] = [
    { name: config.table, role: "table", location: dir, exists: manifest !== undefined, before: stats(dir, data), after: stats(dir, data), steps: [{ kind: "none", status: "done", reason }] },
  ];
  if (config.quarantine.enabled) {
    out.push({ name: config.quarantine.target, role: "quarantine", location: qdir, exists: manifest !== undefined, before: stats(qdir, quarantine), after: stats(qdir, quarantine), steps: [{ kind: "none", status: "done", reason }] });
  }
  return out;
}
