/**
 * Records handed to the DuckDB engine as JSON text, parsed by DuckDB instead of by JavaScript.
 *
 * DuckDB's JSON reader and JSON.parse (with the exact-integer parser, util/exact-json.ts) agree
 * on most records but not all: DuckDB reads NaN, Infinity and trailing commas, keeps the first
 * of two equal keys, spells `-0`, exponents and nested numbers its own way, and lists keys in
 * document order where JavaScript lists integer-like keys first. The screen below declines
 * every line on which the two could differ — with room to spare: a declined line only takes the
 * JavaScript path, as every record did before — and the text part of the validation statement
 * produces, for the lines it accepts, exactly the columns the JavaScript pass would (encode.ts:
 * unknown keys, packed tags, one text per field). test/engine/json-text.test.ts holds the two
 * paths to the same results on a corpus of the differences.
 */
import { quoteIdent, quoteString } from "../util/sql-text.js";
import { TAG, TAGS_PER_WORD } from "./encode.js";
import { UNKNOWN_COL, type Plan, type PlanField } from "./plan-types.js";

/** Whether a plan's records can be given as JSON text at all. */
export function takesJsonText(plan: Plan): boolean {
  // Good rows that keep undeclared keys are built from the records themselves.
  if (plan.passthrough || plan.keepsExtraKeys) return false;
  // Keys spelt inside a JSON path's quotes: no quote, backslash or control character.
  return plan.fields.every((f) => f.keys.every((k) => !/["\\\u0000-\u001f]/.test(k)));
}

/** The plan's input keys (fields' names and aliases) as one JSON path list, and each field's places in it (1-based). */
function paths(plan: Plan): { list: string; at: Map<PlanField, number[]> } {
  const all: string[] = [];
  const at = new Map<PlanField, number[]>();
  for (const f of plan.fields) {
    at.set(
      f,
      f.keys.map((k) => {
        all.push(`$."${k}"`);
        return all.length;
      }),
    );
  }
  return { list: `[${all.map(quoteString).join(", ")}]::VARCHAR[]`, at };
}

/**
 * Text that JSON.parse refuses or reads otherwise while DuckDB reads it (NaN, Infinity, trailing
 * commas, exponents, `-0`, form feed and vertical tab as space), and `__proto__`, which the
 * exact-integer parser treats apart. Matched anywhere in the line, strings included: a false
 * match only sends the line down the JavaScript path.
 */
const DIFFERS = String.raw`NaN|Infinity|,\s*[\]}]|[0-9][eE]|-0([^.0-9]|$)|[\x0b\x0c]|__proto__`;

/** A field's value as JSON (`v`), its JSON type (`y`), and its double (`d`) in the statements below. */
const v = (k: number): string => `__ll_jv${k}`;
const y = (k: number): string => `__ll_jy${k}`;
const d = (k: number): string => `__ll_jd${k}`;

/** Line `l` parsed once into each field's value, its type and (for doubles) its number. */
function fieldValues(plan: Plan, from: string, keep: string[]): string[] {
  const { list, at } = paths(plan);
  const ctes = [`__ll_j1 AS (SELECT ${keep.join(", ")}, json_extract(l, ${list}) AS __ll_x FROM ${from})`];
  const values = plan.fields.map((f) => {
    const parts = at.get(f)!.map((i) => `__ll_x[${i}]`);
    return `${parts.length === 1 ? parts[0]! : `coalesce(${parts.join(", ")})`} AS ${v(f.k)}`;
  });
  ctes.push(`__ll_j2 AS (SELECT ${keep.join(", ")}, ${values.join(", ") || "NULL AS __ll_none"} FROM __ll_j1)`);
  const typed = plan.fields.map((f) => `json_type(${v(f.k)}) AS ${y(f.k)}`);
  ctes.push(`__ll_j3 AS (SELECT *${typed.map((t) => `, ${t}`).join("")} FROM __ll_j2)`);
  const doubles = plan.fields.map((f) => `(CASE WHEN ${y(f.k)} = 'DOUBLE' THEN CAST(CAST(${v(f.k)} AS VARCHAR) AS DOUBLE) END) AS ${d(f.k)}`);
  ctes.push(`__ll_j4 AS (SELECT *${doubles.map((t) => `, ${t}`).join("")} FROM __ll_j3)`);
  return ctes;
}

/** True where the line's field `f` holds a value the JavaScript pass would spell or tag otherwise. */
function fieldDiffers(f: PlanField): string {
  const conds: string[] = [];
  const num = d(f.k);
  // A double whose text DuckDB does not spell as JavaScript's shortest digits (outside 1e-4 ≤ |x| < 1e15,
  // integers beyond 2^53, -0), or an integer written beyond 64 bits.
  conds.push(
    `(${y(f.k)} = 'DOUBLE' AND NOT coalesce(regexp_full_match(CAST(${v(f.k)} AS VARCHAR), '-?[0-9]+\\.[0-9]+') AND NOT (${num} = 0 AND starts_with(CAST(${v(f.k)} AS VARCHAR), '-')) ` +
      `AND (CASE WHEN ${num} = trunc(${num}) THEN abs(${num}) < 9007199254740992 ELSE abs(${num}) >= 1e-4 AND abs(${num}) < 1e15 END), false))`,
  );
  // JSON text of nested values and json fields is spelt by JavaScript (key order, number spelling).
  if (f.json) conds.push(`(${y(f.k)} IS NOT NULL AND ${y(f.k)} <> 'NULL')`);
  else if (f.keepNested) conds.push(`(${y(f.k)} IN ('OBJECT', 'ARRAY'))`);
  return conds.join(" OR ");
}

/**
 * The screen: one row, the JSON list of the positions (0-based) of the lines in `$1` (joined by
 * newlines) that must take the JavaScript path.
 */
export function screenStatement(plan: Plan): string {
  const keys = `json_keys(l)`;
  const perObject = [
    `len(${keys}) <> len(list_distinct(${keys}))`,
    // Integer-like keys come first in JavaScript's key order (only unknown keys are listed).
    ...(plan.tracksUnknown ? [String.raw`regexp_matches(l, '"[0-9]+"\s*:')`] : []),
    ...plan.fields.map(fieldDiffers),
  ];
  const brackets = `length(l) - length(replace(replace(l, '{', ''), '[', ''))`;
  // Lines on which no JSON function may run (they would throw) are set aside first.
  const readable = `json_valid(l) AND NOT regexp_matches(l, ${quoteString(DIFFERS)})`;
  const declined =
    // Nesting near the depth limit is judged by the record-limits walk (src/pipeline/limits.ts).
    `${brackets} >= 64 ` +
    // The exact-integer parser (lines with a long digit run) refuses duplicate keys at any depth.
    `OR (regexp_matches(l, '[0-9]{16}') AND (contains(l, '[') OR length(l) - length(replace(l, '{', '')) > 1)) ` +
    `OR json_type(l) <> 'OBJECT' OR ${perObject.join(" OR ")}`;
  return (
    `WITH __ll_jr AS (SELECT unnest(range(len(L))) AS __ll_i, unnest(L) AS l FROM (SELECT string_split($1::VARCHAR, chr(10)) AS L)),\n` +
    `__ll_jm AS MATERIALIZED (SELECT __ll_i, l, ${readable} AS __ll_ok FROM __ll_jr),\n` +
    `__ll_j0 AS (SELECT __ll_i, l FROM __ll_jm WHERE __ll_ok),\n` +
    `${fieldValues(plan, "__ll_j0", ["__ll_i", "l"]).join(",\n")}\n` +
    `SELECT CAST(to_json(coalesce((SELECT list(__ll_i ORDER BY __ll_i) FROM ` +
    `(SELECT __ll_i FROM __ll_jm WHERE NOT __ll_ok UNION ALL SELECT __ll_i FROM __ll_j4 WHERE ${declined})), [])) AS VARCHAR)`
  );
}

/** The field's tag (TAG in encode.ts) as the JavaScript pass gives it for a screened line. */
function tagSql(f: PlanField): string {
  const t = y(f.k);
  const num = d(f.k);
  const number = f.type === "timestamp" ? `${TAG.number}` : `(CASE WHEN ${num} = trunc(${num}) THEN ${TAG.integral} ELSE ${TAG.number} END)`;
  const integral = f.type === "timestamp" ? TAG.number : TAG.integral;
  return (
    `(CASE ${t} WHEN 'VARCHAR' THEN ${TAG.string} WHEN 'BIGINT' THEN ${integral} WHEN 'UBIGINT' THEN ${integral} ` +
    `WHEN 'DOUBLE' THEN ${number} WHEN 'BOOLEAN' THEN ${TAG.boolean} WHEN 'OBJECT' THEN ${TAG.nested} WHEN 'ARRAY' THEN ${TAG.nested} ELSE ${TAG.none} END)`
  );
}

/** The field's text as the JavaScript pass spells it for a screened line. */
function textSql(f: PlanField): string {
  const t = y(f.k);
  const val = v(f.k);
  const num = d(f.k);
  // A timestamp field's numbers are judged by their tag alone (encodeTimestamp sends no text).
  const numbers =
    f.type === "timestamp"
      ? ""
      : `WHEN 'BIGINT' THEN CAST(${val} AS VARCHAR) WHEN 'UBIGINT' THEN CAST(${val} AS VARCHAR) ` +
        `WHEN 'DOUBLE' THEN (CASE WHEN ${num} = trunc(${num}) THEN CAST(CAST(${num} AS BIGINT) AS VARCHAR) ELSE CAST(${num} AS VARCHAR) END) `;
  return `(CASE ${t} WHEN 'VARCHAR' THEN ${val}->>'$' ${numbers}WHEN 'BOOLEAN' THEN CAST(${val} AS VARCHAR) ELSE NULL END)`;
}

/**
 * CTEs ending in `name`: the screened lines of `$2` (joined by newlines), at the engine positions
 * of `$3` (a JSON list), as the statement's first layer reads the JavaScript pass's columns.
 */
export function jsonLinesInput(plan: Plan, name: string): string[] {
  const known = `[${[...plan.knownKeys].map(quoteString).join(", ")}]::VARCHAR[]`;
  const unknown = plan.tracksUnknown
    ? `(CASE WHEN len(__ll_uk) = 0 THEN NULL ELSE array_to_string(__ll_uk, ', ') END)`
    : "CAST(NULL AS VARCHAR)";
  const words = plan.tagWords.map((word, w) => {
    const fields = plan.fields.filter((f) => Math.floor(f.k / TAGS_PER_WORD) === w);
    const sum = fields.map((f) => `${tagSql(f)} * ${8 ** (f.k % TAGS_PER_WORD)}`).join(" + ") || "0";
    return `CAST(${sum} AS BIGINT) AS ${quoteIdent(word)}`;
  });
  const texts = plan.fields.map((f) => `${textSql(f)} AS ${quoteIdent(f.text)}`);
  const keys = plan.tracksUnknown ? `, list_filter(json_keys(l), k -> NOT list_contains(${known}, k)) AS __ll_uk` : "";
  return [
    `__ll_j0 AS (SELECT unnest(string_split($2::VARCHAR, chr(10))) AS l, unnest(from_json($3::VARCHAR, '["BIGINT"]')) AS __ll_i)`,
    `__ll_jk AS (SELECT *${keys} FROM __ll_j0)`,
    ...fieldValues(plan, "__ll_jk", ["__ll_i", "l", ...(plan.tracksUnknown ? ["__ll_uk"] : [])]),
    `${name} AS (SELECT __ll_i, ${unknown} AS ${UNKNOWN_COL}, ${[...words, ...texts].join(", ")} FROM __ll_j4)`,
  ];
}
