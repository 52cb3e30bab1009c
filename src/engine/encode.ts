/**
 * The one JavaScript pass over a batch: records → columns.
 *
 * Each field becomes a text column plus a 3-bit tag saying what the value was (TAG below);
 * the tags of up to 17 fields are packed into one number per row (base 8), so the engine
 * reads them with integer arithmetic instead of string slicing. Texts: strings as they are,
 * numbers in shortest round-trip digits without exponent, booleans `true`/`false`, JSON
 * text for json fields (and for nested values of undeclared keys a rule reads). Numeric fields'
 * numbers may stay numbers where the engine reads them back as those same digits (encodeNumber).
 * Deciding validity and converting is left to the engine; this pass only spells values — with
 * one exception: a timestamp field's value in Date#toISOString form (nearly every one) is
 * checked here and tagged `integral`, because that costs a fraction of the engine's shape regex
 * (see encodeTimestamp).
 */
import { canonicalIsoMicrosNumber } from "../util/civil-time.js";
import { jsonText } from "../util/exact-json.js";
import { wellFormedJson } from "../util/well-formed-json.js";
import { isWellFormed, numberText } from "./canonical.js";
import type { Plan, PlanField } from "./plan-types.js";

export const TAG = {
  /** Absent, undefined or null. */
  none: 0,
  string: 1,
  /** Integral number or bigint. */
  integral: 2,
  /** Any other finite number. */
  number: 3,
  boolean: 4,
  /** Object or array (text only where a rule may read it). */
  nested: 5,
  /** JSON text of a json field's value. */
  json: 6,
  /** No text form: NaN, ±Infinity, unpaired surrogates, functions, cyclic JSON, … */
  invalid: 7,
} as const;

/** Fields per packed tag number: 17 × 3 bits stays below 2^53. */
export const TAGS_PER_WORD = 17;

export interface EncodedBatch {
  /** Object records handed to the engine. */
  n: number;
  /** Engine row → index in the input array. */
  index: Int32Array;
  /** Input indices of records that are not plain objects. */
  notObject: number[];
  /**
   * One text column per plan field, same order as `plan.fields`; numbers only in the columns of
   * fields with `numberJson` (see encodeNumber).
   */
  columns: Array<Array<string | number | null>>;
  /** Packed tags: word w holds fields 17w … 17w+16, field k at 8^(k mod 17). */
  tags: number[][];
  /** Per engine row: unknown keys joined by ", ", or null (only filled under `quarantine`). */
  unknown: Array<string | null>;
  /**
   * Under `allow`: per engine row, 1 when the record has an own key that is neither a field nor
   * an alias (its good row carries those keys), else 0. Absent: every row is searched.
   */
  extra?: Uint8Array;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

// The encoders return the text and leave the tag in `tag` (one shared slot: no allocation per value).
let tag = 0;

function encodeText(v: unknown, keepNested: boolean): string | null {
  switch (typeof v) {
    case "string":
      if (isWellFormed(v)) {
        tag = TAG.string;
        return v;
      }
      tag = TAG.invalid;
      return null;
    case "number":
      if (Number.isInteger(v)) tag = TAG.integral;
      else if (Number.isFinite(v)) tag = TAG.number;
      else {
        tag = TAG.invalid;
        return null;
      }
      return numberText(v);
    case "boolean":
      tag = TAG.boolean;
      return v ? "true" : "false";
    case "bigint":
      tag = TAG.integral;
      return v.toString();
    case "object":
      if (v === null) {
        tag = TAG.none;
        return null;
      }
      if (v instanceof Date) {
        if (Number.isNaN(v.getTime())) {
          tag = TAG.invalid;
          return null;
        }
        tag = TAG.string;
        return v.toISOString();
      }
      tag = TAG.nested;
      if (!keepNested) return null;
      return json(v, TAG.nested);
    case "undefined":
      tag = TAG.none;
      return null;
    default:
      tag = TAG.invalid;
      return null;
  }
}

/**
 * A timestamp field's value. A string in Date#toISOString form (or with 6 fractional digits)
 * whose date and time are valid, and a valid Date, go tagged `integral` — a tag no other
 * timestamp value gets (numbers are tagged `number`, which a timestamp field rejects as before)
 * — and the engine reads them without its shape regex. Anything else goes as text, for the
 * engine to judge as it always did.
 */
function encodeTimestamp(v: unknown): string | null {
  if (typeof v === "string") {
    if (canonicalIsoMicrosNumber(v) !== undefined) {
      tag = TAG.integral;
      return v;
    }
  } else if (v instanceof Date) {
    const text = Number.isNaN(v.getTime()) ? undefined : v.toISOString();
    if (text !== undefined && canonicalIsoMicrosNumber(text) !== undefined) {
      tag = TAG.integral;
      return text;
    }
  } else if (typeof v === "number" || typeof v === "bigint") {
    tag = TAG.number;
    return null;
  }
  return encodeText(v, false);
}

/**
 * A numeric field's value for an engine that reads the batch document's numbers as text
 * (PlanField.numberJson): a number in the range where JSON.stringify and DuckDB's reading of it
 * spell what `numberText` spells — integers up to 2^53, other numbers from 1e-4 to 1e15 in
 * magnitude (checked over random values in test/engine/encode.test.ts) — goes as the number
 * itself, which costs the JavaScript pass nothing; anything else as text, as for other fields.
 */
function encodeNumber(v: unknown): string | number | null {
  if (typeof v === "number" && spelledAlikeAsJson(v)) {
    tag = Number.isInteger(v) ? TAG.integral : TAG.number;
    return v;
  }
  return encodeText(v, false);
}

/** See encodeNumber. */
export function spelledAlikeAsJson(v: number): boolean {
  const a = Math.abs(v);
  return Number.isInteger(v) ? a <= Number.MAX_SAFE_INTEGER && !Object.is(v, -0) : a >= 1e-4 && a < 1e15;
}

function json(v: unknown, ok: number): string | null {
  try {
    const j = jsonText(v);
    tag = j === undefined ? TAG.invalid : ok;
    return j ?? null;
  } catch {
    tag = TAG.invalid;
    return null;
  }
}

function encodeJson(v: unknown): string | null {
  if (v === null || v === undefined) {
    tag = TAG.none;
    return null;
  }
  if (typeof v === "number" && !Number.isFinite(v)) {
    tag = TAG.invalid;
    return null;
  }
  // A lone surrogate becomes U+FFFD, as the lake stores it: the value is JSON that DuckDB reads.
  const text = json(v, TAG.json);
  return text === null ? null : wellFormedJson(text);
}

/** Keys a plain object inherits: only these need an own-property check after a plain read. */
const INHERITED = new Set(Object.getOwnPropertyNames(Object.prototype));

/** The field's value: its own key, or, when that is absent or undefined, the first alias present. */
export function lookupField(rec: Record<string, unknown>, f: PlanField): unknown {
  const keys = f.keys;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const v = rec[key];
    if (v !== undefined && (!INHERITED.has(key) || Object.hasOwn(rec, key))) return v;
  }
  return undefined;
}

/** Encodes records[from, to) into the arrays from engine row `n` on; returns the next engine row. */
type RowsEncoder = (
  records: readonly unknown[],
  from: number,
  to: number,
  n: number,
  columns: Array<Array<string | number | null>>,
  tags: number[][],
  unknown: Array<string | null>,
  index: Int32Array,
  notObject: number[],
  extra: Uint8Array | undefined,
) => number;

const encoders = new WeakMap<Plan, RowsEncoder>();

/** The text of each unknown key of `rec`, joined by ", ", or null. */
function unknownKeys(rec: Record<string, unknown>, known: ReadonlySet<string>): string | null {
  let extra: string | null = null;
  for (const key in rec) {
    if (!known.has(key) && Object.hasOwn(rec, key)) {
      const shown = isWellFormed(key) ? key : (key as unknown as { toWellFormed(): string }).toWellFormed();
      extra = extra === null ? shown : extra + ", " + shown;
    }
  }
  return extra;
}

/**
 * The record loop, generated once per plan with the field names as literals: `rec["email"]` at
 * its own site stays a fast property load, where one shared `rec[key]` over every field is a
 * megamorphic lookup (measured ~2× slower for the whole pass). Same semantics as `lookupField`:
 * the own-property check is emitted only for keys that Object.prototype also has.
 */
function rowsEncoder(plan: Plan): RowsEncoder {
  let e = encoders.get(plan);
  if (e) return e;
  const nf = plan.fields.length;
  // A switch over the known keys as literals: comparing for-in keys (internalised strings) to
  // them is far cheaper than a Set lookup per key (measured ~10×).
  const knownCases = [...plan.knownKeys].map((k) => `case ${JSON.stringify(k)}:`).join(" ");
  const markExtra = plan.keepsExtraKeys
    ? `extra[n] = 0; for (const key in rec) { switch (key) { ${knownCases} break; default: if (hasOwn(rec, key)) extra[n] = 1; } }`
    : "";
  const lines: string[] = [];
  for (let c = 0; c < nf; c++) {
    const f = plan.fields[c]!;
    const read = f.keys.map((key, i) => {
      const k = JSON.stringify(key);
      const own = INHERITED.has(key) ? ` if (v !== undefined && !hasOwn(rec, ${k})) v = undefined;` : "";
      return `${i === 0 ? "" : "if (v === undefined) { "}v = rec[${k}];${own}${i === 0 ? "" : " }"}`;
    });
    lines.push(read.join(" "));
    lines.push(
      f.json
        ? "x = encodeJson(v);"
        : f.type === "timestamp"
          ? "x = encodeTimestamp(v);"
          : f.numberJson
            ? "x = encodeNumber(v);"
            : `x = encodeText(v, ${f.keepNested});`,
    );
    lines.push("t = lastTag();");
    lines.push(f.stringText ? `c${c}[n] = x;` : `c${c}[n] = t === ${TAG.string} ? null : x;`);
    lines.push(`word += t * ${8 ** (f.k % TAGS_PER_WORD)};`);
    if ((c + 1) % TAGS_PER_WORD === 0 || c === nf - 1) lines.push(`w${Math.floor(c / TAGS_PER_WORD)}[n] = word; word = 0;`);
  }
  if (nf === 0) lines.push("w0[n] = 0;");
  const words = Math.max(1, Math.ceil(nf / TAGS_PER_WORD));
  const body = `
    ${Array.from({ length: nf }, (_, c) => `const c${c} = columns[${c}];`).join(" ")}
    ${Array.from({ length: words }, (_, w) => `const w${w} = tags[${w}];`).join(" ")}
    for (let i = from; i < to; i++) {
      const rec = records[i];
      if (!isPlainObject(rec)) { notObject.push(i); continue; }
      let v, x, t, word = 0;
      ${lines.join("\n      ")}
      unknown[n] = ${plan.tracksUnknown ? "unknownKeys(rec, known)" : "null"};
      ${markExtra}
      index[n] = i;
      n++;
    }
    return n;`;
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated encoder loop, for speed
  const make = new Function(
    "isPlainObject",
    "encodeText",
    "encodeJson",
    "encodeTimestamp",
    "encodeNumber",
    "lastTag",
    "hasOwn",
    "unknownKeys",
    "known",
    `return (records, from, to, n, columns, tags, unknown, index, notObject, extra) => {${body}\n};`,
  ) as (...helpers: unknown[]) => RowsEncoder;
  e = make(isPlainObject, encodeText, encodeJson, encodeTimestamp, encodeNumber, () => tag, Object.hasOwn, unknownKeys, plan.knownKeys);
  encoders.set(plan, e);
  return e;
}

export function encodeBatch(records: readonly unknown[], plan: Plan): EncodedBatch {
  const e = new Encoding(records, plan);
  e.step(records.length);
  return e.finish();
}

/**
 * `encodeBatch` in slices of `sliceRows` records, awaiting `pause()` between them. The pass is
 * the longest stretch of JavaScript in a batch (~5 ms per 10k orders); cut into slices, it
 * lets the callbacks of work in flight on other threads run meanwhile — a lake write is a
 * chain of DuckDB calls, each continued on this thread, and otherwise waits for the whole pass.
 */
export async function encodeBatchInSlices(
  records: readonly unknown[],
  plan: Plan,
  sliceRows: number,
  pause: () => Promise<void>,
): Promise<EncodedBatch> {
  const e = new Encoding(records, plan);
  const step = Math.max(1, Math.floor(sliceRows));
  for (let to = Math.min(step, records.length); ; to = Math.min(to + step, records.length)) {
    e.step(to);
    if (to >= records.length) break;
    await pause();
  }
  return e.finish();
}

/** One batch's pass, run over consecutive ranges of the records. */
class Encoding {
  private readonly encode: RowsEncoder;
  private readonly index: Int32Array;
  private readonly notObject: number[] = [];
  private readonly columns: Array<Array<string | number | null>>;
  private readonly tags: number[][];
  private readonly unknown: Array<string | null>;
  private readonly extra: Uint8Array | undefined;
  private done = 0;
  private n = 0;

  constructor(
    private readonly records: readonly unknown[],
    plan: Plan,
  ) {
    const total = records.length;
    this.encode = rowsEncoder(plan);
    this.index = new Int32Array(total);
    this.columns = plan.fields.map(() => new Array<string | number | null>(total));
    const words = Math.max(1, Math.ceil(plan.fields.length / TAGS_PER_WORD));
    this.tags = Array.from({ length: words }, () => new Array<number>(total));
    this.unknown = new Array<string | null>(total);
    this.extra = plan.keepsExtraKeys ? new Uint8Array(total) : undefined;
  }

  /** Encode the records up to index `to` (exclusive). */
  step(to: number): void {
    this.n = this.encode(this.records, this.done, to, this.n, this.columns, this.tags, this.unknown, this.index, this.notObject, this.extra);
    this.done = to;
  }

  finish(): EncodedBatch {
    const { n, columns, tags, unknown, extra } = this;
    if (n < this.records.length) {
      for (const c of columns) c.length = n;
      for (const t of tags) t.length = n;
      unknown.length = n;
    }
    const enc: EncodedBatch = { n, index: this.index.subarray(0, n), notObject: this.notObject, columns, tags, unknown };
    if (extra) enc.extra = extra.subarray(0, n);
    return enc;
  }
}

/** One row with an empty string in every column: runs a compiled plan once before real data. */
export function dryRunBatch(plan: Plan): EncodedBatch {
  return {
    n: 1,
    index: Int32Array.of(0),
    notObject: [],
    columns: plan.fields.map(() => [""]),
    tags: plan.tagWords.map(() => [0]),
    unknown: [null],
  };
}
