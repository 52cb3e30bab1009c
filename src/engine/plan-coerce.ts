/**
 * The coercion layers of a plan: from each field's text and tag columns to its typed value,
 * the columns good rows are built from, and its type-error flag.
 */
import {
  DATE_RE,
  DECIMAL_RE,
  decimalPrecision,
  decimalScale,
  DOUBLE_RE,
  FALSE_RE,
  INTEGER_RE,
  MAX_MICROS,
  MAX_SAFE,
  MIN_DAYS,
  MIN_MICROS,
  TIMESTAMP_RE,
  TRUE_RE,
} from "./canonical.js";
import { TAG, TAGS_PER_WORD } from "./encode.js";
import {
  and,
  bool,
  cast,
  cmp,
  col,
  eq,
  int,
  isNull,
  isTrue,
  matches,
  not,
  notNull,
  nullOf,
  num,
  or,
  str,
  when,
  type Expr,
  type Layer,
} from "./ir.js";
import type { Output, PlanField } from "./plan-types.js";

export interface Coercion {
  /** The value layers, then the type-error layer (empty ones left out). */
  layers: Layer[];
  outputs: Output[];
  /** The column a field's values are compared by for uniqueness and primary keys. */
  keyCol: Map<PlanField, string>;
  /** A field's value as text, as regex and accepted-values checks read it. */
  textOf: Map<PlanField, Expr>;
}

type Put = (slot: number, name: string, e: Expr) => void;
type Tag = keyof typeof TAG;

const tagWord = (k: number): string => `__ll_w${Math.floor(k / TAGS_PER_WORD)}`;

/** A timestamp field's range flag: its value converted and is within the supported range. */
const okCol = (k: number): string => `__ll_ok${k}`;

const tagIs = (f: PlanField, ...tags: Tag[]): Expr => or(...tags.map((t) => eq(col(f.tag), int(TAG[t]))));

export function compileCoercion(fields: readonly PlanField[]): Coercion {
  const slots: Layer[] = [0, 1, 2, 3, 4].map(() => ({ columns: [] }));
  const put: Put = (slot, name, e) => {
    slots[slot]!.columns.push([name, e]);
  };
  const out: Omit<Coercion, "layers"> = { outputs: [], keyCol: new Map(), textOf: new Map() };
  for (const f of fields) coerceField(f, put, out);
  return { layers: [...slots, errorLayer(fields)].filter((l) => l.columns.length > 0), ...out };
}

function coerceField(f: PlanField, put: Put, out: Omit<Coercion, "layers">): void {
  const { outputs, keyCol, textOf } = out;
  const k = f.k;
  const g = `__ll_g${k}`;
  const a = `__ll_a${k}`;
  put(0, f.tag, { op: "digit8", e: col(tagWord(k)), pos: k % TAGS_PER_WORD });
  const T = col(f.text);
  const V = col(f.val);
  const typed = f.name;
  const trimmed: Expr = { op: "trimWs", e: T };
  /** Numbers arrive in plain decimal notation and skip the regex; strings must match `re`. */
  const numeric = (re: string, numberTags: Tag[]): Expr => {
    const fromString: [Expr, Expr] = [and(tagIs(f, "string"), matches(T, re)), trimmed];
    return when(numberTags.length ? [[tagIs(f, ...numberTags), T], fromString] : [fromString], nullOf("utf8"));
  };
  switch (f.type) {
    case "untyped":
      put(1, f.val, T);
      put(4, typed, V);
      // Undeclared keys have no type: 1 and "1" are different values.
      put(4, `__ll_k${k}`, when([[notNull(V), { op: "concat", parts: [cast(col(f.tag), "utf8"), str(":"), V] }]], nullOf("utf8")));
      keyCol.set(f, `__ll_k${k}`);
      break;
    case "string":
      put(1, f.val, when([[tagIs(f, "string", "integral", "number", "boolean"), T]], nullOf("utf8")));
      put(4, typed, V);
      put(4, `__ll_os${k}`, when([[tagIs(f, "integral", "number", "boolean"), T]], nullOf("utf8")));
      outputs.push({ name: f.name, kind: "string", col: `__ll_os${k}`, field: f });
      break;
    case "json":
      put(1, f.val, when([[tagIs(f, "json"), T]], nullOf("utf8")));
      put(4, typed, V);
      outputs.push({ name: f.name, kind: "json", col: f.val, field: f });
      break;
    case "boolean":
      put(
        1,
        f.val,
        when(
          [
            [tagIs(f, "boolean"), eq(T, str("true"))],
            [and(tagIs(f, "integral"), eq(T, str("1"))), bool(true)],
            [and(tagIs(f, "integral"), { op: "inList", e: T, values: ["0", "-0"], type: "utf8" }), bool(false)],
            [and(tagIs(f, "string"), matches(T, TRUE_RE)), bool(true)],
            [and(tagIs(f, "string"), matches(T, FALSE_RE)), bool(false)],
          ],
          nullOf("bool"),
        ),
      );
      put(4, typed, V);
      textOf.set(f, cast(V, "utf8"));
      outputs.push({ name: f.name, kind: "bool", col: f.val, field: f });
      break;
    case "integer": {
      put(1, g, numeric(INTEGER_RE, ["integral"]));
      put(2, f.val, cast(col(g), "int64"));
      put(4, typed, V);
      const safe = and(cmp(">=", V, int(-MAX_SAFE)), cmp("<=", V, int(MAX_SAFE)));
      put(4, `__ll_on${k}`, when([[safe, cast(V, "float64")]], nullOf("float64")));
      put(4, `__ll_ob${k}`, when([[not(safe), cast(V, "utf8")]], nullOf("utf8")));
      textOf.set(f, cast(V, "utf8"));
      outputs.push({ name: f.name, kind: "int", col: `__ll_on${k}`, bigCol: `__ll_ob${k}`, field: f });
      break;
    }
    case "double":
      put(1, g, numeric(DOUBLE_RE, ["integral", "number"]));
      put(2, a, cast(col(g), "float64"));
      put(3, f.val, when([[{ op: "isFinite", e: col(a) }, col(a)]], nullOf("float64")));
      put(4, typed, V);
      // -0.0 and 0.0 are one value for uniqueness.
      put(4, `__ll_k${k}`, { op: "arith", fn: "+", a: V, b: num(0) });
      keyCol.set(f, `__ll_k${k}`);
      // Regexes see a double as it was written (trimmed): engines print doubles differently.
      textOf.set(f, col(g));
      outputs.push({ name: f.name, kind: "float", col: f.val, field: f });
      break;
    case "decimal": {
      const p = decimalPrecision(f.spec!);
      const sc = decimalScale(f.spec!);
      put(1, g, numeric(DECIMAL_RE, ["integral", "number"]));
      put(2, f.val, { op: "decimalCanon", e: col(g), precision: p, scale: sc });
      put(4, typed, { op: "decimalValue", e: V, precision: p, scale: sc, text: col(g) });
      outputs.push({ name: f.name, kind: "text", col: f.val, field: f });
      break;
    }
    case "date":
      put(1, g, numeric(DATE_RE, []));
      put(2, a, { op: "dateToDays", e: col(g) });
      put(3, f.val, when([[cmp(">=", col(a), int(MIN_DAYS)), col(g)]], nullOf("utf8")));
      put(4, typed, when([[notNull(V), { op: "daysToDate", e: col(a) }]]));
      outputs.push({ name: f.name, kind: "text", col: f.val, field: f });
      break;
    case "timestamp": {
      // `integral`: text the JS pass found in canonical form, which needs no regex (encodeTimestamp).
      put(1, g, numeric(TIMESTAMP_RE, ["integral"]));
      put(2, a, { op: "timestampToMicros", e: col(g) });
      const inRange = and(cmp(">=", col(a), int(MIN_MICROS)), cmp("<=", col(a), int(MAX_MICROS)));
      put(3, okCol(k), isTrue(inRange));
      put(4, f.val, when([[col(okCol(k)), { op: "formatMicros", e: col(a) }]], nullOf("utf8")));
      put(4, typed, when([[col(okCol(k)), { op: "microsToTimestamp", e: col(a) }]]));
      outputs.push({ name: f.name, kind: "text", col: f.val, field: f });
      break;
    }
  }
  if (!keyCol.has(f)) keyCol.set(f, f.val);
  if (!textOf.has(f)) textOf.set(f, V);
}

/** Errors need every field's final value, so they go one layer after the last value layer. */
function errorLayer(fields: readonly PlanField[]): Layer {
  const layer: Layer = { columns: [] };
  for (const f of fields) {
    if (!f.err) continue;
    const present = cmp("!=", col(f.tag), int(TAG.none));
    // A string field's value may not have been sent (see PlanField.stringText): judge by tag.
    // Decimals and timestamps are judged by their typed value and range flag, which are null /
    // false exactly when the canonical text is null: an engine then need not spell that text.
    const failed =
      f.type === "string"
        ? not(tagIs(f, "string", "integral", "number", "boolean"))
        : f.type === "decimal"
          ? isNull(col(f.name))
          : f.type === "timestamp"
            ? not(col(okCol(f.k)))
            : isNull(col(f.val));
    layer.columns.push([f.err, and(present, failed)]);
  }
  return layer;
}
