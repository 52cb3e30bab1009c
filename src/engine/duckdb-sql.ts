/**
 * The DuckDB engine's SQL: the IR spelt as SQL expressions, the batch document that is the
 * statement's one parameter, and the statements themselves (the one that validates a batch, and
 * the probes that look for what made it fail).
 */
import { rowRuleSql } from "../contract/sql-bind.js";
import { quoteIdent, quoteString } from "../util/sql-text.js";
import { duckdbMeasure } from "./dataset-measure.js";
import type { EncodedBatch } from "./encode.js";
import type { Expr, Layer } from "./ir.js";
import { BAD_COL, FAIL_COL, SUPERSEDED_COL, UNKNOWN_COL, type Plan } from "./plan-types.js";

const SQL_TYPE = { utf8: "VARCHAR", int64: "BIGINT", float64: "DOUBLE", bool: "BOOLEAN" } as const;

export function toSql(e: Expr): string {
  switch (e.op) {
    case "col":
      return quoteIdent(e.name);
    case "lit":
      if (e.value === null) return `CAST(NULL AS ${SQL_TYPE[e.type]})`;
      switch (e.type) {
        case "utf8":
          return quoteString(String(e.value));
        case "int64":
          return `CAST(${String(e.value)} AS BIGINT)`;
        case "float64":
          return `CAST('${String(e.value)}' AS DOUBLE)`;
        case "bool":
          return e.value ? "TRUE" : "FALSE";
      }
      break;
    case "digit8":
      // Shift and mask: no division (and its zero check) per value; tag words are never negative.
      return `((${toSql(e.e)} >> ${3 * e.pos}) & 7)`;
    case "matches":
      return `regexp_matches(${toSql(e.e)}, ${quoteString(e.pattern)})`;
    case "extract":
      // regexp_extract gives '' for "no match"; the IR says null.
      return `nullif(regexp_extract(${toSql(e.e)}, ${quoteString(e.pattern)}, ${e.group}), '')`;
    case "trimWs": {
      // trim() with a character set is slow; most values have nothing to trim.
      const x = toSql(e.e);
      const ends = ["' '", "chr(9)", "chr(10)", "chr(13)"].map((w) => `starts_with(${x}, ${w}) OR ends_with(${x}, ${w})`);
      return `(CASE WHEN ${ends.join(" OR ")} THEN trim(${x}, ' ' || chr(9) || chr(10) || chr(13)) ELSE ${x} END)`;
    }
    case "replaceAll":
      return `regexp_replace(${toSql(e.e)}, ${quoteString(e.pattern)}, ${quoteString(e.replacement.replaceAll("\\", "\\\\"))}, 'g')`;
    case "fitRight":
      return `rpad(${toSql(e.e)}, ${e.length}, ${quoteString(e.fill)})`;
    case "concat":
      return `(${e.parts.map(toSql).join(" || ")})`;
    case "joinNonNull":
      return `nullif(concat_ws(${quoteString(e.sep)}, ${e.parts.map(toSql).join(", ")}), '')`;
    case "length":
      return `CAST(length(${toSql(e.e)}) AS BIGINT)`;
    case "cast":
      return `TRY_CAST(${toSql(e.e)} AS ${SQL_TYPE[e.to]})`;
    case "arith":
      return `(${toSql(e.a)} ${e.fn} ${toSql(e.b)})`;
    case "cmp":
      return `(${toSql(e.a)} ${e.fn === "!=" ? "<>" : e.fn} ${toSql(e.b)})`;
    case "and":
      return `(${e.args.map(toSql).join(" AND ")})`;
    case "or":
      return `(${e.args.map(toSql).join(" OR ")})`;
    case "not":
      return `(NOT ${toSql(e.e)})`;
    case "isNull":
      return `(${toSql(e.e)} IS NULL)`;
    case "isFinite":
      return `isfinite(${toSql(e.e)})`;
    case "coalesce":
      return `coalesce(${e.args.map(toSql).join(", ")})`;
    case "case": {
      const branches = e.when.map(([c, v]) => `WHEN ${toSql(c)} THEN ${toSql(v)}`).join(" ");
      return `(CASE ${branches}${e.otherwise ? ` ELSE ${toSql(e.otherwise)}` : ""} END)`;
    }
    case "inList": {
      const lits = e.values.map((v) =>
        toSql({ op: "lit", value: v, type: e.type === "float64" ? "float64" : e.type === "bool" ? "bool" : "utf8" }),
      );
      return `(${toSql(e.e)} IN (${lits.join(", ")}))`;
    }
    case "dateToDays":
      return `(TRY_CAST(${toSql(e.e)} AS DATE) - DATE '1970-01-01')`;
    case "daysToDate":
      return `(DATE '1970-01-01' + CAST(${toSql(e.e)} AS INTEGER))`;
    case "timestampToMicros": {
      // The connection's TimeZone is UTC, so text without a zone is read as UTC. DuckDB wants
      // seconds before a zone ("10:00Z" fails), so those get ":00".
      const x = toSql(e.e);
      const withSeconds = `(CASE WHEN length(${x}) <= 16 OR substr(${x}, 17, 1) = ':' THEN ${x} ELSE left(${x}, 16) || ':00' || substr(${x}, 17) END)`;
      return `epoch_us(TRY_CAST(${withSeconds} AS TIMESTAMPTZ))`;
    }
    case "microsToTimestamp":
      return `make_timestamp(${toSql(e.e)})`;
    case "formatMicros":
      return `strftime(make_timestamp(${toSql(e.e)}), '%Y-%m-%dT%H:%M:%S.%fZ')`;
    case "decimalCanon":
      return `CAST(TRY_CAST(${toSql(e.e)} AS DECIMAL(${e.precision},${e.scale})) AS VARCHAR)`;
    case "decimalValue":
      // decimalCanon is TRY_CAST to DECIMAL spelt as text: cast the text it came from instead.
      return e.text
        ? `TRY_CAST(${toSql(e.text)} AS DECIMAL(${e.precision},${e.scale}))`
        : `CAST(${toSql(e.e)} AS DECIMAL(${e.precision},${e.scale}))`;
    case "sqlRule":
      // As the contract loader bound it (sql-bind.ts).
      return rowRuleSql(e.sql);
    case "lastInGroup":
      // PARTITION BY groups NULLs together, as the op says.
      return `(row_number() OVER (PARTITION BY ${e.keys.map(toSql).join(", ")} ORDER BY ${toSql(e.order)} DESC) = 1)`;
  }
  throw new Error(`unreachable: ${(e as { op: string }).op}`);
}

/** The post layer that flags superseded rows (plan.ts, supersedeLayer). */
const isSupersedeLayer = (layer: Layer): boolean => layer.columns.length === 1 && layer.columns[0]![0] === SUPERSEDED_COL;

const layerSql = (from: string, layer: Layer): string =>
  `SELECT *, ${layer.columns.map(([n, e]) => `${toSql(e)} AS ${quoteIdent(n)}`).join(", ")} FROM ${from}`;

/** JSON member names of the batch document. */
const payloadKey = (k: number): string => `c${k}`;

/**
 * The batch as the statement's one parameter, spelt one member (unknown keys, tag words, one text
 * column per field) at a time with `pause()` between them (see encodeBatchInSlices).
 */
export async function batchPayload(plan: Plan, enc: EncodedBatch, pause?: () => Promise<void>): Promise<string> {
  const members: Array<[string, Array<string | number | null>]> = [
    ["u", enc.unknown],
    ...enc.tags.map((t, w): [string, number[]] => [`t${w}`, t]),
    // Numbers in a text column are read back as their text (from_json into VARCHAR).
    ...plan.fields.map((f): [string, Array<string | number | null>] => [payloadKey(f.k), enc.columns[f.k]!]),
  ];
  // The braces go in with the members: one join makes one flat string, which the binding reads
  // as it is (wrapping the join in a template makes a rope that is copied once more to be read).
  const parts: string[] = [];
  for (const [key, values] of members) {
    if (parts.length > 0) await pause?.();
    parts.push(`${parts.length === 0 ? "{" : ""}"${key}":${JSON.stringify(values)}`);
  }
  parts[parts.length - 1] += "}";
  return parts.join(",");
}

export interface StatementOptions {
  /** Instead of validating: the sql rule over the typed columns, one row per batch row. */
  probe?: string;
  /** Add the merge's keys to the summary (keyedTarget). */
  keys?: boolean;
  /** `false`: no dataset measures (`ds` is empty); a number: only that dataset rule's measure, as the one value selected. */
  measures?: false | number;
}

/** The one statement that validates a batch, or one of its probes (StatementOptions). */
export function buildStatement(plan: Plan, options: StatementOptions = {}): string {
  const probe = options.probe;
  const struct =
    `{"u":["VARCHAR"]` +
    plan.tagWords.map((_, w) => `,"t${w}":["BIGINT"]`).join("") +
    plan.fields.map((f) => `,"${payloadKey(f.k)}":["VARCHAR"]`).join("") +
    "}";
  const unnest = [
    `unnest(range(len(j.u))) AS __ll_i`,
    `unnest(j.u) AS ${UNKNOWN_COL}`,
    ...plan.tagWords.map((name, w) => `unnest(j.t${w}) AS ${quoteIdent(name)}`),
    ...plan.fields.map((f) => `unnest(j.${payloadKey(f.k)}) AS ${quoteIdent(f.text)}`),
  ];
  const ctes: string[] = [`s0 AS (SELECT ${unnest.join(", ")} FROM (SELECT from_json($1::VARCHAR, '${struct}') AS j))`];
  if (probe !== undefined) {
    plan.layers.forEach((layer, i) => ctes.push(`s${i + 1} AS (${layerSql(`s${i}`, layer)})`));
    const rule = toSql({ op: "sqlRule", sql: probe });
    const from = `s${plan.layers.length}`;
    return `WITH ${ctes.join(",\n")}\n` + `SELECT ${rule} FROM ${from}`;
  }
  // The failure list is spelt only for bad rows (below), not computed for every row. The
  // superseded flag's layer (plan.ts, supersedeLayer) is left out: evaluatedBatch computes it.
  const post = plan.postLayers.filter((l) => !isSupersedeLayer(l)).map((l) => ({ columns: l.columns.filter(([n]) => n !== FAIL_COL) }));
  const failExpr = plan.postLayers.flatMap((l) => l.columns).find(([n]) => n === FAIL_COL)?.[1];
  const layers: Layer[] = [
    ...plan.layers,
    ...(plan.sqlRules.length ? [{ columns: plan.sqlRules.map(([c, sql]): [string, Expr] => [c, { op: "sqlRule", sql }]) }] : []),
    ...post.filter((l) => l.columns.length > 0),
  ];
  layers.forEach((layer, i) => ctes.push(`s${i + 1} AS (${layerSql(`s${i}`, layer)})`));
  // The evaluated batch is read three times: materialise it once, with only the columns
  // read afterwards (not every intermediate string).
  const keep = new Set(["__ll_i", BAD_COL, ...plan.checks.map((c) => c.flag), ...plan.outputs.map((o) => o.field.name)]);
  plan.dataset.forEach((d) => d.cols.forEach((c) => keep.add(c)));
  plan.primaryKeyCols?.forEach((c) => keep.add(c));
  plan.supersedeBy?.forEach((c) => keep.add(c));
  ctes.push(...evaluatedBatch(`SELECT ${[...keep].map(quoteIdent).join(", ")} FROM s${layers.length}`, plan.supersedeBy));
  /** A row that is written: not bad, not superseded. */
  const good = goodRowSql(plan);

  const counts = plan.checks.length ? `[${plan.checks.map((c) => `count_if(${quoteIdent(c.flag)})`).join(", ")}]` : "[]";
  const measures = options.measures;
  if (typeof measures === "number") {
    const d = plan.dataset[measures]!;
    // A sql rule's measure is a subquery of its own: one value, even over no rows.
    const from = d.rule.kind === "sql" ? "" : " FROM ev";
    return `WITH ${ctes.join(",\n")}\nSELECT CAST(${duckdbMeasure(d, good)} AS DOUBLE)${from}`;
  }
  const dataset = measures === false ? [] : plan.dataset.map((d) => duckdbMeasure(d, good));
  const fail = failExpr ? toSql(failExpr) : "''";
  const doc = [
    `counts := ${counts}`,
    `ds := [${dataset.join(", ")}]::DOUBLE[]`,
    `n := count_if(${good})`,
    `bad := (SELECT list(struct_pack(p := __ll_i, c := ${fail})) FROM ev WHERE ${BAD_COL})`,
  ];
  if (plan.supersedeBy) doc.push(`sup := (SELECT list(__ll_i ORDER BY __ll_i) FROM ev WHERE ${quoteIdent(SUPERSEDED_COL)})`);
  const pk = plan.primaryKeyCols?.map(quoteIdent);
  if (pk) {
    // Compared as the lake compares them (typed values; NULL parts match each other).
    const pkNull = `count_if(${good} AND (${pk.map((c) => `${c} IS NULL`).join(" OR ")}))`;
    // One column: count(DISTINCT) skips NULLs, and all NULL keys are one key (cheaper than row()).
    const distinct =
      pk.length === 1
        ? `count(DISTINCT ${pk[0]}) FILTER (WHERE ${good}) + least(${pkNull}, 1)`
        : `count(DISTINCT row(${pk.join(", ")})) FILTER (WHERE ${good})`;
    doc.push(`pkDistinct := ${distinct}`, `pkNull := ${pkNull}`);
  }
  // The merge's keys, as text that casts back to each key's type exactly (see GoodColumns.keys).
  const keyFields = options.keys ? plan.primaryKeyFields : undefined;
  if (keyFields) {
    // The first key part's range, so that the lake can skip a merge's delete when no stored
    // key falls in it (GoodColumns.keys.range).
    const over = (agg: string) => `CAST(${agg}(${quoteIdent(keyFields[0]!)}) FILTER (WHERE ${good}) AS VARCHAR)`;
    doc.push(`lo := ${over("min")}`, `hi := ${over("max")}`);
  }
  const keysDoc = keyFields
    ? ` || chr(1) || CAST(to_json(struct_pack(${keyFields
        .map((name, i) => `k${i} := list(CAST(${quoteIdent(name)} AS VARCHAR)) FILTER (WHERE ${good})`)
        .join(", ")})) AS VARCHAR)`
    : "";
  const meta = `(SELECT CAST(to_json(struct_pack(${doc.join(", ")})) AS VARCHAR)${keysDoc} FROM ev)`;
  const head = `WITH ${ctes.join(",\n")}\n`;
  if (plan.outputs.length === 0) return `${head}SELECT ${meta}`;
  // The good rows come back as rows of typed columns (GoodColumns: DuckDB data chunks the lake
  // appends as they are), followed by one row that carries the counts and the bad rows in a text
  // column (summaryColumn). With one thread the rows keep their order: arrival order, then that row.
  const typed = plan.outputs.map((o) => quoteIdent(o.field.name));
  const at = summaryColumn(plan);
  if (at === typed.length) typed.push("CAST(NULL AS VARCHAR)");
  // Last, the row-number slot of GoodColumns: the position, a flat non-NULL BIGINT vector.
  typed.push("CAST(__ll_i AS BIGINT)");
  return (
    `${head}SELECT ${typed.join(", ")} FROM ev WHERE ${good}\n` +
    `UNION ALL SELECT ${typed.map((_, i) => (i === at ? meta : "NULL")).join(", ")}`
  );
}

/**
 * The `ev` CTE: the evaluated batch, materialised once. With `supersedeBy`, plus the superseded
 * flag: a good row that is not the last good row of its key (the plan's `lastInGroup`, with bad
 * rows a partition of their own). Computed as the last position per key (a hash aggregate) and
 * an anti-join rather than the layer's window: measured, the window took a third of a keyed
 * batch's statement; this takes a few milliseconds per 10,000 rows. The join may hand rows over
 * in another order: sorted back, so that good and bad rows keep arrival order.
 */
function evaluatedBatch(kept: string, supersedeBy: readonly string[] | undefined): string[] {
  if (!supersedeBy) return [`ev AS MATERIALIZED (${kept})`];
  const keys = supersedeBy.map(quoteIdent).join(", ");
  const last = `SELECT max(__ll_i) FROM sk WHERE NOT ${BAD_COL} GROUP BY ${keys}`;
  return [
    `sk AS MATERIALIZED (${kept})`,
    `ev AS MATERIALIZED (SELECT *, (NOT ${BAD_COL} AND __ll_i NOT IN (${last})) AS ${quoteIdent(SUPERSEDED_COL)} FROM sk ORDER BY __ll_i)`,
  ];
}

/** SQL that is true on a row that is written: not bad, and (keyed targets) not superseded. */
function goodRowSql(plan: Plan): string {
  return plan.supersedeBy ? `NOT ${BAD_COL} AND NOT ${quoteIdent(SUPERSEDED_COL)}` : `NOT ${BAD_COL}`;
}

/**
 * The column of the statement's last row that holds the summary, so that the good rows' chunks
 * are GoodColumns as they are: under `unknown_fields: allow` the column for undeclared keys that
 * follows the fields (NULL on every good row GoodColumns stand for); else the first text-typed
 * field; else an added column (GoodColumns are then not given).
 */
export function summaryColumn(plan: Plan): number {
  const text = plan.outputs.findIndex((o) => o.field.type === "string" || o.field.type === "json");
  return plan.keepsExtraKeys || text < 0 ? plan.outputs.length : text;
}
