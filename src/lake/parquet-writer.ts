import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
} from "node:fs";
import { join } from "node:path";
import { DuckDBInstance, type DuckDBConnection } from "../util/duckdb.js";
import { ConfigError, LakeLogicError } from "../errors.js";
import { quoteIdent, quoteString } from "../util/sql-text.js";
import { buildChunks, convertAll, selectRows } from "./chunks.js";
import { keyMatch, stageDeletes } from "./stage.js";
import { planColumns, type ColumnPlan } from "./columns.js";
import { quarantineLocationOf, type LakeConfig } from "./config.js";
import { LakeWriteError } from "./errors.js";
import { prepareQuarantine, QUARANTINE_COLUMNS } from "./quarantine.js";
import { takeLock, writeFileAtomic } from "./dataset-files.js";
import { fsyncPath, isQuarantineFileOf, uniqueParquetName as uniqueName } from "./quarantine-files.js";
import { commitOf } from "./commit-log.js";
import { SEQ_COLUMN } from "./row-seq.js";
import { checkTableContract, recordOf, type ExistingTable, type StoredColumn, type TableRecord } from "./table-contract.js";
import type { LakeCommit, LakeWriter, WriteRequest, WriteResult } from "./types.js";

/**
 * Parquet layout (see docs/lake.md):
 *
 *   <targetPath>/<table>/part-b00000012-1a2b3c4d.parquet     data files, never modified in place
 *   <targetPath>/<table>/_lakelogic/manifest.json             the live file set (data + quarantine)
 *   <targetPath>/<table>/_lakelogic/writer.lock               pid of the live writer
 *   <targetPath>/<quarantine>/<table>-b00000012-….parquet     quarantine files of this table
 *   <quarantine path>/<table>/<table>-b00000012-….parquet      … or so, when quarantine.target is a path
 *
 * A batch becomes visible when the manifest is replaced (write temp, fsync, rename, fsync dir),
 * so data and quarantine files of one batch appear together or not at all. Files that no
 * manifest lists (a crash before the rename, files replaced by a merge) are deleted when the next
 * writer opens the dataset.
 */
export const META_DIR = "_lakelogic";
export const MANIFEST_FILE = "manifest.json";
const LOCK_FILE = "writer.lock";
const MANIFEST_FORMAT = "lakelogic.parquet-manifest";

export interface ManifestFile {
  file: string;
  rows: number;
  batchId: number;
}

export interface Manifest {
  format: typeof MANIFEST_FORMAT;
  version: 1;
  table: string;
  quarantineTarget: string;
  /** +1 per committed batch. */
  generation: number;
  /** Data files, relative to the table directory. */
  data: ManifestFile[];
  /** Quarantine files, relative to the quarantine directory. */
  quarantine: ManifestFile[];
  /**
   * Per checkpoint key, the newest batch of that stream the dataset holds: part of the manifest,
   * so it changes in the same rename as the batch's files and is never there without them.
   */
  commits?: Record<string, LakeCommit>;
  /**
   * The greatest row sequence number handed out (row-seq.ts): the files' `_lakelogic_seq` values
   * go up to it. Absent until the first good row is written.
   */
  lastSeq?: number;
  /**
   * What the table is written with (table-contract.ts): the primary key, strategy and every
   * column the files hold, with its type. Absent until the first batch is written.
   */
  contract?: WrittenTable;
  updatedAt: string;
}

/** The manifest's record of the table's contract. */
export type WrittenTable = TableRecord & { columns: StoredColumn[] };

export function tableDir(config: LakeConfig): string {
  return join(config.targetPath, config.table);
}

/** Where this table's quarantine files go: beside the table, or under a path target (LakeConfig.quarantine.dir). */
export function quarantineDir(config: LakeConfig): string {
  return quarantineLocationOf(config);
}

export function readManifest(config: LakeConfig): Manifest | undefined {
  return readManifestAt(tableDir(config));
}

/** The manifest of the table whose directory is `dir`, or undefined when it has none yet. */
export function readManifestAt(dir: string): Manifest | undefined {
  const path = join(dir, META_DIR, MANIFEST_FILE);
  if (!existsSync(path)) return undefined;
  const m = JSON.parse(readFileSync(path, "utf8")) as Partial<Manifest>;
  if (m.format !== MANIFEST_FORMAT || !Array.isArray(m.data) || !Array.isArray(m.quarantine)) {
    throw new LakeWriteError(`${path} is not a LakeLogic parquet manifest`);
  }
  return m as Manifest;
}

function emptyManifest(config: LakeConfig): Manifest {
  return {
    format: MANIFEST_FORMAT,
    version: 1,
    table: config.table,
    quarantineTarget: config.quarantine.target,
    generation: 0,
    data: [],
    quarantine: [],
    updatedAt: new Date(0).toISOString(),
  };
}

export class ParquetLakeWriter implements LakeWriter {
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly config: LakeConfig,
    private readonly instance: DuckDBInstance,
    private readonly conn: DuckDBConnection,
    private readonly plans: ColumnPlan[],
    private readonly keyPlans: number[],
    private manifest: Manifest,
    private readonly knownQuarantineIds: Set<string>,
    private readonly lockPath: string,
    /** What each batch's manifest records (Manifest.contract). */
    private readonly written: WrittenTable,
  ) {}

  static async open(config: LakeConfig): Promise<ParquetLakeWriter> {
    const dir = tableDir(config);
    const qdir = quarantineDir(config);
    mkdirSync(join(dir, META_DIR), { recursive: true });
    if (config.quarantine.enabled) mkdirSync(qdir, { recursive: true });
    const lockPath = join(dir, META_DIR, LOCK_FILE);
    takeLock(lockPath);
    let instance: DuckDBInstance | undefined;
    try {
      const manifest = readManifest(config) ?? emptyManifest(config);
      if (manifest.quarantineTarget !== config.quarantine.target) {
        throw new ConfigError(
          "quarantine.target",
          `the dataset ${dir} keeps its quarantine in "${manifest.quarantineTarget}", the contract says "${config.quarantine.target}"; ` +
            "keep the original quarantine.target or write to a new table",
        );
      }
      instance = await DuckDBInstance.create(":memory:");
      const conn = await instance.connect();
      const plans = planColumns(config);
      const existing = existingTable(manifest);
      checkTableContract(config, plans, existing, dir);
      collectGarbage(config, manifest);
      const keyPlans = config.primaryKey.map((k) => plans.findIndex((p) => p.name.toLowerCase() === k.toLowerCase()));
      await conn.run(`CREATE TABLE stage (${plans.map((p) => `${quoteIdent(p.name)} ${p.sqlType}`).join(", ")})`);
      // The keys a batch deletes (merge with a primary key only).
      if (config.strategy === "merge" && keyPlans.length > 0) {
        await conn.run(`CREATE TABLE dstage (${keyPlans.map((k) => `${quoteIdent(plans[k]!.name)} ${plans[k]!.sqlType}`).join(", ")})`);
      }
      await conn.run(`CREATE TABLE qstage (${QUARANTINE_COLUMNS.map((c) => `${c.name} ${c.sqlType}`).join(", ")})`);
      const known = new Set<string>();
      if (manifest.quarantine.length > 0) {
        const files = manifest.quarantine.map((f) => join(qdir, f.file));
        const reader = await conn.runAndReadAll(`SELECT quarantine_id FROM read_parquet(${sqlList(files)})`);
        for (const [id] of reader.getRows()) known.add(String(id));
      }
      const written = { ...recordOf(config), columns: withPlanned(existing?.columns ?? [], plans) };
      return new ParquetLakeWriter(config, instance, conn, plans, keyPlans, manifest, known, lockPath, written);
    } catch (e) {
      // The in-memory instance is left to the garbage collector (see duckdb-db.ts).
      rmSync(lockPath, { force: true });
      throw e;
    }
  }

  write(request: WriteRequest): Promise<WriteResult> {
    if (this.closed) return Promise.reject(new LakeWriteError(`lake writer for table "${this.config.table}" is closed`));
    const run = this.tail.then(() => this.writeNow(request));
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** The stream's newest batch in this dataset, from the live manifest. */
  lastCommit(key: string): Promise<LakeCommit | undefined> {
    const commit = Object.hasOwn(this.manifest.commits ?? {}, key) ? this.manifest.commits![key] : undefined;
    return Promise.resolve(commit ? { ...commit } : undefined);
  }

  /** Parquet cannot commit a checkpoint with the data; `checkpoint: "target"` needs duckdb or delta. */
  checkpointStore(): never {
    throw new ConfigError(
      "checkpoint",
      '"target" keeps the cursor in the lake\'s own commits and needs materialization.format duckdb or delta; ' +
        "this lake writes parquet. Use a SQLite checkpoint path or a CheckpointStore",
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.tail;
    // The in-memory instance and its connection are left to the garbage collector: closing them
    // under results not yet collected corrupts the native heap (see duckdb-db.ts).
    rmSync(this.lockPath, { force: true });
  }

  private async writeNow(req: WriteRequest): Promise<WriteResult> {
    const { config, conn } = this;
    if (req.checkpoint) this.checkpointStore();
    const dir = tableDir(config);
    const qdir = quarantineDir(config);
    const keyed = config.strategy === "merge" || (config.strategy === "overwrite" && this.keyPlans.length > 0);
    const selection = selectRows(this.plans, req.good, keyed ? this.keyPlans : undefined);
    let count = selection.selected.length;
    const deletes = req.deletes && req.deletes.length > 0 ? req.deletes : undefined;
    if (deletes && (config.strategy !== "merge" || this.keyPlans.length === 0)) {
      throw new LakeWriteError(`batch ${req.batchId} deletes keys, but dataset "${config.table}" is not a merge target with a primary key`);
    }
    const columns = convertAll(this.plans, req.good, selection);

    const created: string[] = []; // paths to remove if the batch fails before the manifest moves
    let data = [...this.manifest.data];
    let replaced: ManifestFile[] = [];
    let quarantineFiles = this.manifest.quarantine;
    let newIds: string[] = [];
    let badAlreadyPresent = 0;
    let published = false;
    try {
      await conn.run("DELETE FROM stage");
      if (count > 0) {
        const appender = await conn.createAppender("stage");
        for (const chunk of buildChunks(this.plans.map((p) => p.vectorType), columns, count)) {
          appender.appendDataChunk(chunk);
        }
        appender.closeSync();
      }
      if (deletes) count -= await stageDeletes(conn, this.plans, this.keyPlans, deletes);

      if (config.strategy === "overwrite") {
        replaced = data;
        data = [];
      } else if (config.strategy === "merge" && (count > 0 || deletes) && data.length > 0) {
        ({ data, replaced } = await this.rewriteTouched(data, deletes !== undefined, req.batchId, created));
      }
      if (count > 0) {
        const name = uniqueName("part", req.batchId);
        const rows = await this.copyToFile(numberedStage(this.manifest.lastSeq ?? 0), dir, name, created);
        data.push({ file: name, rows, batchId: req.batchId });
      }

      if (config.quarantine.enabled && req.bad.length > 0) {
        const q = prepareQuarantine(req.bad, req.batchId, config.quarantine.includeErrorReason, new Date());
        const fresh: number[] = [];
        q.ids.forEach((id, i) => {
          if (!this.knownQuarantineIds.has(id)) fresh.push(i);
        });
        badAlreadyPresent = q.ids.length - fresh.length;
        if (fresh.length > 0) {
          await conn.run("DELETE FROM qstage");
          const appender = await conn.createAppender("qstage");
          const freshColumns = q.columns.map((col) => fresh.map((i) => col[i] ?? null));
          for (const chunk of buildChunks(QUARANTINE_COLUMNS.map((c) => c.vectorType), freshColumns, fresh.length)) {
            appender.appendDataChunk(chunk);
          }
          appender.closeSync();
          const name = uniqueName(config.table, req.batchId);
          const rows = await this.copyToFile("SELECT * FROM qstage", qdir, name, created);
          quarantineFiles = [...quarantineFiles, { file: name, rows, batchId: req.batchId }];
          newIds = fresh.map((i) => q.ids[i]!);
        }
      }

      // The commit point: everything above is invisible until this rename.
      const next: Manifest = {
        ...this.manifest,
        generation: this.manifest.generation + 1,
        data,
        quarantine: quarantineFiles,
        ...commitsAfter(this.manifest, req, count, this.written),
        updatedAt: new Date().toISOString(),
      };
      if (created.length > 0) {
        fsyncPath(dir, "r");
        if (quarantineFiles !== this.manifest.quarantine) fsyncPath(qdir, "r");
      }
      writeFileAtomic(join(dir, META_DIR), MANIFEST_FILE, `${JSON.stringify(next, null, 1)}\n`, () => {
        // Renamed: the batch is visible, its files must stay even if the directory fsync fails.
        published = true;
        this.manifest = next;
        for (const id of newIds) this.knownQuarantineIds.add(id);
      });
    } catch (e) {
      if (published) {
        throw new LakeWriteError(
          `batch ${req.batchId} is in the manifest of ${dir}, but syncing the directory failed, so it may not survive a power loss: ${(e as Error).message}`,
          { cause: e },
        );
      }
      for (const path of created) rmSync(path, { force: true });
      if (e instanceof LakeLogicError) throw e;
      throw new LakeWriteError(
        `batch ${req.batchId} was not written to ${dir} (the manifest was not changed): ${(e as Error).message}`,
        { cause: e },
      );
    }
    // Replaced files are unreachable now; a crash here leaves them for the next open's GC.
    for (const f of replaced) rmSync(join(dir, f.file), { force: true });
    return { goodWritten: count, badWritten: newIds.length, badAlreadyPresent };
  }

  /**
   * Merge: rewrite only the files holding a key of this batch (written or deleted), into one file
   * without those keys. Returns the files that stay and those the new one replaces.
   */
  private async rewriteTouched(
    files: ManifestFile[],
    deletes: boolean,
    batchId: number,
    created: string[],
  ): Promise<{ data: ManifestFile[]; replaced: ManifestFile[] }> {
    const dir = tableDir(this.config);
    const on = this.keyMatch("f", "s");
    const keys = deletes ? `(SELECT ${this.keyList()} FROM stage UNION ALL SELECT ${this.keyList()} FROM dstage)` : "stage";
    const hit = await this.conn.runAndReadAll(
      `SELECT DISTINCT f.filename FROM read_parquet(${sqlList(files.map((f) => join(dir, f.file)))}, filename = true, union_by_name = true) AS f
       SEMI JOIN ${keys} AS s ON ${on}`,
    );
    const touched = new Set(hit.getRows().map((r) => String(r[0])));
    if (touched.size === 0) return { data: files, replaced: [] };
    const data = files.filter((f) => !touched.has(join(dir, f.file)));
    const name = uniqueName("part", batchId, "-m");
    const rows = await this.copyToFile(
      `SELECT f.* FROM read_parquet(${sqlList([...touched])}, union_by_name = true) AS f ANTI JOIN ${keys} AS s ON ${on}`,
      dir,
      name,
      created,
    );
    if (rows > 0) data.push({ file: name, rows, batchId });
    else unlinkSync(join(dir, name));
    return { data, replaced: files.filter((f) => touched.has(join(dir, f.file))) };
  }

  /** The key columns of `a` and `b` match, NULL parts matching each other. */
  private keyMatch(a: string, b: string): string {
    return keyMatch(this.plans, this.keyPlans, a, b);
  }

  private keyList(): string {
    return this.keyPlans.map((p) => quoteIdent(this.plans[p]!.name)).join(", ");
  }

  /** COPY a query to `<dir>/<name>` via a temp name; returns the row count. */
  private async copyToFile(query: string, dir: string, name: string, created: string[]): Promise<number> {
    const tmp = join(dir, `${name}.tmp`);
    created.push(tmp);
    const result = await this.conn.run(`COPY (${query}) TO ${quoteString(tmp)} (FORMAT parquet, COMPRESSION zstd)`);
    fsyncPath(tmp, "r+");
    const final = join(dir, name);
    created.push(final);
    renameSync(tmp, final);
    return result.rowsChanged;
  }
}

/** The dataset as its manifest records it; undefined until its first batch is written. */
function existingTable(manifest: Manifest): ExistingTable | undefined {
  if (!manifest.contract) return undefined;
  const { columns, ...record } = manifest.contract;
  return { record, columns };
}

/** The stored columns, then the contract's fields the table does not have yet (files read them by name). */
function withPlanned(columns: readonly StoredColumn[], plans: readonly ColumnPlan[]): StoredColumn[] {
  const names = new Set(columns.map((c) => c.name.toLowerCase()));
  const added = plans.filter((p) => !names.has(p.name.toLowerCase())).map((p) => ({ name: p.name, type: p.sqlType }));
  return [...columns, ...added];
}

/**
 * The manifest's commit log with this batch's entry (commit-log.ts), when it makes one, the
 * greatest row sequence number after its `count` good rows (row-seq.ts), and what the batch was
 * written with (table-contract.ts).
 */
function commitsAfter(manifest: Manifest, req: WriteRequest, count: number, contract: WrittenTable): Pick<Manifest, "commits" | "lastSeq" | "contract"> {
  const logged = commitOf(req);
  return {
    contract,
    ...(logged ? { commits: { ...manifest.commits, [logged.key]: logged.commit } } : {}),
    ...(count > 0 ? { lastSeq: (manifest.lastSeq ?? 0) + count } : {}),
  };
}

/** The staged good rows, numbered on from `seq` (row-seq.ts). */
function numberedStage(seq: number): string {
  return `SELECT *, ${seq}::BIGINT + row_number() OVER () AS ${quoteIdent(SEQ_COLUMN)} FROM stage`;
}

export function sqlList(paths: readonly string[]): string {
  return `[${paths.map(quoteString).join(", ")}]`;
}

/** Delete what no manifest references: leftovers of a crashed batch and files a merge replaced. */
function collectGarbage(config: LakeConfig, manifest: Manifest): void {
  const dir = tableDir(config);
  const live = new Set(manifest.data.map((f) => f.file));
  for (const name of readdirSync(dir)) {
    if ((name.startsWith("part-") && (name.endsWith(".parquet") || name.endsWith(".tmp")) && !live.has(name))) {
      rmSync(join(dir, name), { force: true });
    }
  }
  for (const name of readdirSync(join(dir, META_DIR))) {
    if (name.startsWith(`${MANIFEST_FILE}.`) && name.endsWith(".tmp")) rmSync(join(dir, META_DIR, name), { force: true });
  }
  const qdir = quarantineDir(config);
  if (!existsSync(qdir)) return;
  const liveQ = new Set(manifest.quarantine.map((f) => f.file));
  // The quarantine directory may be shared: only this table's files (prefixed with its name).
  for (const name of readdirSync(qdir)) {
    if (isQuarantineFileOf(config.table, name) && !liveQ.has(name)) rmSync(join(qdir, name), { force: true });
  }
}
