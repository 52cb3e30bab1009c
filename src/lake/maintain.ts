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
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Contract, LakeFormat } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import { DUCKDB_FILE, joinLocation, resolveLakeConfig, type LakeConfig } from "./config.js";
import { DeltaHelper } from "./delta-helper.js";
import { storageOptions } from "./delta-writer.js";
import { acquireDatabase } from "./duckdb-db.js";
import { LakeWriteError } from "./errors.js";
import { quarantineDir, readManifest, tableDir } from "./parquet-writer.js";

/** Delta's default `delta.deletedFileRetentionDuration`: vacuum keeps a week of removed files. */
export const DEFAULT_RETAIN_HOURS = 168;

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
   * delta: accept a retention below the table's minimum. A reader or writer still working on an
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
      // To come with the format: merge_adjacent_files, expire_snapshots, cleanup_old_files, flush_inlined_data.
      throw new ConfigError("materialization.format", "lake maintenance of format ducklake is not supported yet");
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
    const location = config.quarantine.dir ?? joinLocation(config.targetPath, config.quarantine.target);
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
