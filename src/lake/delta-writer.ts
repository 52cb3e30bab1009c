import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance, type DuckDBConnection } from "../util/duckdb.js";
import { decideCommit } from "../checkpoint/cas.js";
import type { CheckpointRecord, CheckpointStore } from "../checkpoint/types.js";
import { LakeLogicError } from "../errors.js";
import { quoteIdent, quoteString } from "../util/sql-text.js";
import { BatchStage } from "./stage.js";
import { planColumns, type ColumnPlan } from "./columns.js";
import { joinLocation, quarantineLocationOf, type LakeConfig } from "./config.js";
import { commitOf } from "./commit-log.js";
import { TableCheckpointStore, decodeCommit, encodeCommit, type DeltaCommitMeta } from "./table-checkpoint.js";
import { DeltaHelper, DeltaHelperError } from "./delta-helper.js";
import { LakeWriteError } from "./errors.js";
import { checkTableContract, recordOf, type StoredColumn } from "./table-contract.js";
import type { LakeCommit, LakeWriter, WriteRequest, WriteResult } from "./types.js";

/**
 * Delta Lake tables through delta-rs (delta-helper.ts), on a local path or object storage:
 *
 *   <targetPath>/<table>                 the table (its `_delta_log/` and data files)
 *   <targetPath>/<quarantine.target>     the quarantine, a Delta table too
 *
 * A batch's rows are staged in an in-memory DuckDB (the same conversion as every format), handed
 * over as Parquet files, and committed by the helper. The quarantine commit comes first and is
 * idempotent (rows are inserted only under quarantine ids the table lacks); the target's commit
 * carries the stream's transaction identifier (appId = checkpoint key, version = batch id) and
 * its checkpoint, so the table says which batch of the stream it holds, and a rival writer of the
 * same batch loses the commit (Delta's conflict check on transaction identifiers) and is fenced.
 */
export class DeltaLakeWriter implements LakeWriter {
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;
  private store?: TableCheckpointStore;
  /**
   * The newest commit this writer made per stream: what the table holds unless another writer
   * committed since — and then this writer's next commit fails its compare-and-set anyway. Saves
   * reading the table's history before every batch.
   */
  private readonly own = new Map<string, DeltaCommitMeta & { record?: CheckpointRecord }>();

  private constructor(
    private readonly config: LakeConfig,
    private readonly helper: DeltaHelper,
    private readonly conn: DuckDBConnection,
    private readonly stage: BatchStage,
    private readonly plans: ColumnPlan[],
    private readonly keyPlans: number[],
    private readonly stageDir: string,
    readonly tableUri: string,
    private readonly quarantineUri: string | undefined,
  ) {}

  static async open(config: LakeConfig): Promise<DeltaLakeWriter> {
    const helper = DeltaHelper.start();
    const stageDir = mkdtempSync(join(tmpdir(), "lakelogic-delta-"));
    try {
      const tableUri = joinLocation(config.targetPath, config.table);
      const quarantineUri = !config.quarantine.enabled ? undefined : quarantineLocationOf(config);
      const plans = planColumns(config);
      const found = await helper.request<{ exists: boolean; columns?: StoredColumn[]; record?: ReturnType<typeof recordOf> | null }>("open", {
        uri: tableUri,
        storage: storageOptions(tableUri),
      });
      if (found.exists) {
        // Compared in Delta's own type names: a column written by Spark or delta-rs has no DuckDB type.
        const asDelta = plans.map((p) => ({ ...p, sqlType: deltaTypeOf(p.sqlType) }));
        checkTableContract(config, asDelta, { record: found.record ?? undefined, columns: found.columns ?? [] }, tableUri);
      }
      const instance = await DuckDBInstance.create(":memory:");
      const conn = await instance.connect();
      // Timestamps are staged as UTC instants: Delta's `timestamp` (what Spark and Python write).
      await conn.run("SET TimeZone = 'UTC'");
      const keyPlans = config.primaryKey.map((k) => plans.findIndex((p) => p.name.toLowerCase() === k.toLowerCase()));
      const stage = await BatchStage.create(conn, config, plans, keyPlans);
      return new DeltaLakeWriter(config, helper, conn, stage, plans, keyPlans, stageDir, tableUri, quarantineUri);
    } catch (e) {
      await helper.close().catch(() => undefined);
      rmSync(stageDir, { recursive: true, force: true });
      throw e;
    }
  }

  write(request: WriteRequest): Promise<WriteResult> {
    if (this.closed) return Promise.reject(new LakeWriteError(`lake writer for table "${this.config.table}" is closed`));
    const run = this.tail.then(() => this.writeNow(request));
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** The stream's checkpoints, read from the table's own commits (`checkpoint: "target"`). */
  checkpointStore(): CheckpointStore {
    this.store ??= new TableCheckpointStore(this.tableUri, (key) => this.held(key), (record) => this.commitOnly(record));
    return this.store;
  }

  async lastCommit(key: string): Promise<LakeCommit | undefined> {
    const held = await this.held(key);
    return held?.cursorDigest === undefined ? undefined : { batchId: held.batchId, cursorDigest: held.cursorDigest };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.tail;
    await this.helper.close();
    rmSync(this.stageDir, { recursive: true, force: true });
  }

  /** The newest batch of stream `key` the table holds, with what its commit recorded. */
  private async held(key: string): Promise<(DeltaCommitMeta & { record?: CheckpointRecord }) | undefined> {
    return this.own.get(key) ?? loadDeltaHeld(this.helper, this.tableUri, key);
  }

  /** A checkpoint committed on its own: an empty batch carrying it. */
  private async commitOnly(record: CheckpointRecord): Promise<WriteResult> {
    return this.write({ batchId: record.batchId, good: [], bad: [], checkpoint: record });
  }

  private async writeNow(req: WriteRequest): Promise<WriteResult> {
    const { config } = this;
    if (req.checkpoint && req.checkpoint.batchId !== req.batchId) {
      throw new LakeWriteError(`checkpoint batchId ${req.checkpoint.batchId} differs from the request's batchId ${req.batchId}`);
    }
    const deletes = req.deletes && req.deletes.length > 0 ? req.deletes : undefined;
    if (deletes && (config.strategy !== "merge" || this.keyPlans.length === 0)) {
      throw new LakeWriteError(`batch ${req.batchId} deletes keys, but table "${config.table}" is not a merge target with a primary key`);
    }
    const files: string[] = [];
    try {
      let count = await this.stage.good(req.good);
      if (deletes) count -= await this.stage.deletes(deletes);
      const good = await this.copy(this.goodQuery(), `good-${req.batchId}.parquet`, files);
      const dfile = deletes ? await this.copy("SELECT * FROM dstage", `deletes-${req.batchId}.parquet`, files) : undefined;
      const bad = this.quarantineUri !== undefined && req.bad.length > 0 ? req.bad : [];
      const qfile = bad.length > 0 ? await this.stageQuarantine(req, files) : undefined;
      const key = req.checkpoint?.key ?? req.stream?.key;
      const logged = commitOf(req);
      const meta: DeltaCommitMeta = {
        batchId: req.batchId,
        table: recordOf(config),
        ...(key !== undefined ? { key } : {}),
        ...(logged ? { cursorDigest: logged.commit.cursorDigest } : {}),
        ...(req.checkpoint ? { checkpoint: encodeCommit(req.checkpoint) } : {}),
      };
      const reply = await this.helper.request<{ status: "written" | "held"; quarantined?: number; version?: number | null; commit?: unknown }>("write", {
        storage: storageOptions(this.tableUri),
        table: {
          uri: this.tableUri,
          mode: config.strategy,
          key: this.keyPlans.map((k) => this.plans[k]!.name),
          good,
          ...(dfile ? { deletes: dfile } : {}),
        },
        ...(qfile ? { quarantine: { uri: this.quarantineUri, file: qfile } } : {}),
        txn: {
          ...(key !== undefined ? { appId: key } : { appId: `lakelogic:${config.table}` }),
          version: req.batchId,
          // With the checkpoint: compare-and-set on the table's transaction version.
          ...(req.checkpoint ? { expect: req.batchId - 1 } : {}),
          // A stream that replays from its cursor sends a committed batch again only after a crash
          // between the table's commit and the checkpoint's: when the table's commit of this batch
          // ended at the same cursor it holds these records, write nothing. A batch cut elsewhere
          // (a timer, a batch size that grew) holds other records and is written.
          ...(!req.checkpoint && req.stream?.replay === "cursor" && logged ? { skipHeld: logged.commit.cursorDigest } : {}),
          metadata: meta,
        },
      });
      if (reply.status === "held") {
        if (key !== undefined) this.own.delete(key);
        return this.heldResult(req, reply);
      }
      if (req.checkpoint) this.own.set(req.checkpoint.key, { ...meta, record: req.checkpoint });
      else if (key !== undefined) this.own.delete(key);
      const quarantined = reply.quarantined ?? 0;
      return {
        goodWritten: count,
        badWritten: quarantined,
        badAlreadyPresent: bad.length - quarantined,
        ...(req.checkpoint ? { checkpointOutcome: "committed" as const } : {}),
      };
    } catch (e) {
      // Whether the commit landed is unknown: read the table next time.
      const key = req.checkpoint?.key ?? req.stream?.key;
      if (key !== undefined) this.own.delete(key);
      if (e instanceof LakeLogicError && !(e instanceof DeltaHelperError)) throw e;
      throw new LakeWriteError(`batch ${req.batchId} was not written to the Delta table ${this.tableUri}: ${(e as Error).message}`, {
        cause: e,
        retriable: e instanceof DeltaHelperError,
      });
    } finally {
      for (const f of files) rmSync(f, { force: true });
    }
  }

  /** The table already holds the stream past this batch's predecessor: a retry, or a rival. */
  private heldResult(req: WriteRequest, reply: { version?: number | null; commit?: unknown }): WriteResult {
    const nothing = { goodWritten: 0, badWritten: 0, badAlreadyPresent: 0 };
    if (!req.checkpoint) return nothing;
    const key = req.checkpoint.key;
    const stored = reply.version == null ? undefined : decodeCommit(reply.commit, key, reply.version, this.tableUri).record;
    // Throws CheckpointConflictError for a rival's commit (or a table behind the checkpoint).
    const outcome = decideCommit(stored, req.checkpoint);
    return { ...nothing, checkpointOutcome: outcome };
  }

  private async stageQuarantine(req: WriteRequest, files: string[]): Promise<string> {
    await this.stage.quarantine(req.bad, req.batchId, new Date());
    return this.copy(
      `SELECT * REPLACE (record::VARCHAR AS record, position::VARCHAR AS position, quarantined_at::TIMESTAMPTZ AS quarantined_at) FROM qstage`,
      `quarantine-${req.batchId}.parquet`,
      files,
    );
  }

  /** The staged rows in Delta's types: JSON as text, timestamps as UTC instants. */
  private goodQuery(): string {
    const cols = this.plans.map((p) => {
      const c = quoteIdent(p.name);
      if (p.sqlType === "JSON") return `${c}::VARCHAR AS ${c}`;
      if (p.sqlType === "TIMESTAMP") return `${c}::TIMESTAMPTZ AS ${c}`;
      return c;
    });
    return `SELECT ${cols.join(", ")} FROM stage`;
  }

  private async copy(query: string, name: string, files: string[]): Promise<string> {
    const path = join(this.stageDir, name);
    files.push(path);
    await this.conn.run(`COPY (${query}) TO ${quoteString(path)} (FORMAT parquet, COMPRESSION uncompressed)`);
    return path;
  }
}

/** The newest batch of stream `key` the Delta table at `uri` holds, as the commit that set it recorded it. */
export async function loadDeltaHeld(helper: DeltaHelper, uri: string, key: string): Promise<(DeltaCommitMeta & { record?: CheckpointRecord }) | undefined> {
  const reply = await helper.request<{ version: number | null; commit?: unknown }>("load", { uri, storage: storageOptions(uri), appId: key });
  return reply.version === null ? undefined : decodeCommit(reply.commit, key, reply.version, uri);
}

/** Delta's name for a staged column type (table-contract comparisons). */
export function deltaTypeOf(sqlType: string): string {
  const t = sqlType.toUpperCase();
  if (t === "BIGINT") return "long";
  if (t === "VARCHAR" || t === "JSON") return "string";
  if (t === "DOUBLE") return "double";
  if (t === "BOOLEAN") return "boolean";
  if (t === "DATE") return "date";
  if (t === "TIMESTAMP") return "timestamp";
  const dec = /^DECIMAL\((\d+),(\d+)\)$/.exec(t.replace(/\s+/g, ""));
  if (dec) return `decimal(${dec[1]},${dec[2]})`;
  return sqlType.toLowerCase();
}

/**
 * Options for delta-rs's object store. Credentials come from each cloud's default chain (the
 * helper inherits this process's environment: AWS_*, GOOGLE_APPLICATION_CREDENTIALS, AZURE_*),
 * never from here. On S3, commits are made with conditional writes (If-None-Match), so writers
 * on many machines need no lock service — unless a locking provider is configured.
 */
export function storageOptions(uri: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  if (!/^s3a?:\/\//i.test(uri)) return {};
  if (env.AWS_S3_LOCKING_PROVIDER) return {};
  return { conditional_put: "etag" };
}
