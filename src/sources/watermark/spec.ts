import type { ComponentSpec } from "../core/spec.js";
import { DEFAULT_SETTLE_MS, SETTLE_MODES } from "./settle.js";

/**
 * `{"type": "postgres", ...}`: the keyset backfill of `postgresWatermarkSource`, configured as
 * JSON. Option names follow `WatermarkChunkSource` (`watermarkField`, `tieBreakerField`).
 */
export const postgresSpec = {
  type: "postgres",
  kind: "cursor",
  summary:
    "A PostgreSQL table (or the rows of a SELECT) read in keyset order on (watermark, tie-breaker), " +
    "`chunkSize` rows per query; the cursor is the last row's (watermark, tie-breaker), so a run " +
    "resumes exactly after it and rows sharing a watermark are never lost at a chunk boundary. " +
    "`available_now` stops at the greatest position present when the run starts; `continuous` keeps " +
    "polling, backing off while nothing is new. Reads stop short of rows a transaction still in flight could commit behind " +
    "(`settle`, on for sequence and timestamp watermarks). One connection, read-only, closed with the source.",
  peerDependency: "pg",
  options: {
    url: {
      type: "string",
      required: true,
      secret: true,
      description:
        "Connection string, `postgres://user:password@host:5432/db` (libpq parameters such as `sslmode` in the query string).",
    },
    table: { type: "string", description: "Table to read; quoted as an identifier (case and dots kept as written). Give `table` or `query`." },
    schema: { type: "string", description: "Schema of `table`. Default: the connection's `search_path`." },
    query: {
      type: "string",
      description:
        "Instead of `table`: one SELECT (or WITH … SELECT) whose rows are read, paged as a subquery. It must return the watermark and tie-breaker columns under those names, take no `$n` parameters, and neither order nor limit its rows.",
    },
    watermarkField: { type: "string", required: true, description: "Column holding the watermark, e.g. `updated_at`; rows where it is NULL are never read." },
    tieBreakerField: {
      type: "string",
      description: "Column that makes (watermark, tie-breaker) unique, usually the primary key. Needed whenever two rows can share a watermark.",
    },
    uniqueWatermark: {
      type: "boolean",
      default: false,
      description: "Without a tie-breaker: declare that no two rows share a watermark (checked while reading).",
    },
    columns: { type: "string[]", description: "Columns to read (the watermark and tie-breaker are added). Default: all." },
    settle: {
      type: "string",
      enum: SETTLE_MODES,
      default: "auto",
      description:
        "How far a read goes so that no transaction still in flight can commit a row behind the cursor. `snapshot`: up to the greatest watermark seen once the transactions then writing the table have ended (a sequence or identity column). `time`: only rows whose watermark is `settleMs` older than the server's clock (a timestamp). `auto`: `snapshot` for smallint / integer / bigint, `time` for timestamps, nothing otherwise. `off`: every visible row.",
    },
    settleMs: {
      type: "integer",
      min: 0,
      default: DEFAULT_SETTLE_MS,
      description: "`settle: time`: how much older than the server's clock a row's watermark must be to be read; longer than the longest writing transaction. 0 turns the time horizon off.",
    },
    chunkSize: { type: "integer", min: 1, max: 1_000_000, default: 1000, description: "Rows per query." },
    idleBackoffMaxMs: {
      type: "integer",
      min: 1,
      default: 5000,
      description: "`continuous`: longest pause between polls while nothing is new (the pause doubles from 200 ms).",
    },
  },
  check: (o) => {
    if (o.table === undefined && o.query === undefined) {
      return { option: "table", message: 'expected one of "table" (a table name) and "query" (a SELECT); neither was given' };
    }
    if (o.table !== undefined && o.query !== undefined) {
      return { option: "query", message: 'expected "table" or "query", not both' };
    }
    if (o.schema !== undefined && o.table === undefined) {
      return { option: "schema", message: 'applies to "table" only; name the schema inside the query' };
    }
    if (o.tieBreakerField === undefined && o.uniqueWatermark !== true) {
      return {
        option: "tieBreakerField",
        message:
          `paging on "${String(o.watermarkField)}" alone skips rows that share a watermark at a chunk boundary; ` +
          "set tieBreakerField (usually the primary key), or uniqueWatermark: true if no two rows share a watermark",
      };
    }
    if (o.tieBreakerField !== undefined && o.tieBreakerField === o.watermarkField) {
      return { option: "tieBreakerField", message: "must be another column than watermarkField" };
    }
    if (!/^postgres(ql)?:\/\//.test(String(o.url))) {
      return { option: "url", message: "expected a connection string starting with postgres:// or postgresql://" };
    }
    return undefined;
  },
} as const satisfies ComponentSpec;
