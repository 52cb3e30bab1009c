import type { ComponentSpec, OptionSpec } from "../core/spec.js";

const options = {
  path: {
    type: "string",
    required: true,
    description:
      "The lake the table is in: the directory a contract's `materialization.target_path` names (holding `lakelogic.duckdb`, or a directory per table for parquet and delta), or the `.duckdb` file itself. For delta, also an object-storage URI (`s3://bucket/lake`).",
  },
  table: { type: "string", required: true, description: "The table to read: the writing contract's `materialization.table`, else its `dataset`." },
  format: {
    type: "string",
    enum: ["duckdb", "parquet", "delta"],
    description:
      "How the table is stored. Default: found from what is in `path` (a `.duckdb` file, `<table>/_delta_log/`, or `<table>/_lakelogic/manifest.json`); a URI `path` is delta.",
  },
  chunkSize: { type: "integer", min: 1, max: 1_000_000, default: 1000, description: "Rows per query." },
  pollIntervalMs: {
    type: "integer",
    min: 1,
    default: 1000,
    description: "`continuous`: pause between looks for new commits while nothing is new.",
  },
} as const satisfies Record<string, OptionSpec>;

const summary =
  "The good rows of a table another contract writes to the lake (bronze → silver), read in the order the lake " +
  "committed them: every row carries a sequence number (`_lakelogic_seq`) that grows with each commit, and a row a " +
  "merge changes gets a new one. The cursor is the last number read, so a run resumes exactly after it and a " +
  "replay after a crash reads the same rows. Only committed rows are read. `available_now` stops at what was " +
  "committed when the run starts; `continuous` keeps looking for new commits. A Delta table (written by LakeLogic, " +
  "Spark or any Delta writer) is read version by version instead: the cursor is the table version and the rows of it " +
  "read, and each version gives the rows it inserted or changed (its Change Data Feed where the table records one).";

/** `{"type": "lake", "path": "lake/bronze", "table": "bronze_orders"}`: a lake table as a source. */
export const lakeSpec = {
  type: "lake",
  kind: "cursor",
  summary,
  options,
} as const satisfies ComponentSpec;

/** `type: duckdb`: the same source, for a table in a duckdb lake (the format is not detected). */
export const duckdbLakeSpec = {
  type: "duckdb",
  kind: "cursor",
  summary: "A table of a duckdb lake: the `lake` source with `format: duckdb`.",
  options: {
    path: options.path,
    table: options.table,
    chunkSize: options.chunkSize,
    pollIntervalMs: options.pollIntervalMs,
  },
} as const satisfies ComponentSpec;
