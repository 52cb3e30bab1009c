import type { QuarantineRow } from "../lake/types.js";
import type { SourceRecord } from "../sources/core/types.js";

/** Rule id of the records quarantined for breaking a record limit. */
export const LIMIT_RULE_ID = "limit";

/**
 * Deepest nesting of objects and arrays a record may have; the record itself is level 1. JSON
 * libraries commonly stop at 64 to 128 levels, and no event schema needs more; past this, the
 * engine's and the lake's own recursion over the value would get near the stack's limit.
 */
export const MAX_NESTING_DEPTH = 64;

/**
 * Default largest record: 16 MiB, above the largest message the supported brokers accept by
 * default (Pub/Sub 10 MB; Kafka, SQS and Event Grid about 1 MB), and equal to the default
 * `maxBatchBytes`, so a record that passes always fits one batch's byte budget.
 */
export const DEFAULT_MAX_RECORD_BYTES = 16 * 1024 * 1024;

export interface RecordLimits {
  /**
   * Largest record, in bytes: its raw payload when it has one, and its value as JSON text
   * (estimated from below: a record is not quarantined unless its JSON is over the limit).
   */
  maxRecordBytes: number;
}

export const DEFAULT_RECORD_LIMITS: Readonly<RecordLimits> = Object.freeze({ maxRecordBytes: DEFAULT_MAX_RECORD_BYTES });

/** Most characters of a quarantined object's description (records from an iterable have no payload). */
const DESCRIPTION_CHARS = 64 * 1024;

/** Why a walk stopped early. Thrown, not returned: the walk of an ordinary record never stops. */
class Breach extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

interface Walk {
  max: number;
  /** JSON characters still allowed; below zero the record is over maxRecordBytes. */
  left: number;
  /** The objects from the record down to the one being walked, by depth. */
  path: object[];
}

/**
 * The reason `record` breaks a record limit, or undefined for a record within them. One walk of
 * the value, never deeper than MAX_NESTING_DEPTH and never longer than maxRecordBytes (so a
 * cycle, or a graph whose JSON would be huge, costs no more than a record at the limits).
 */
export function limitBreach(record: SourceRecord, limits: RecordLimits): string | undefined {
  const max = limits.maxRecordBytes;
  if (record.raw !== undefined && rawOver(record.raw, max)) {
    return `the record's raw payload is ${rawBytes(record.raw)} bytes, larger than maxRecordBytes (${max} bytes)`;
  }
  const v = record.value;
  if (typeof v !== "object" || v === null) return typeof v === "string" && v.length + 2 > max ? overMessage(max) : undefined;
  const walk: Walk = { max, left: max, path: [] };
  try {
    walkObject(v, 1, walk);
    return undefined;
  } catch (e) {
    if (e instanceof Breach) return e.reason;
    // A getter or proxy that throws: the engine would fail on it the same way, for the whole batch.
    return `the record could not be read: reading it threw ${e instanceof Error ? e.name : typeof e}`;
  }
}

/** The quarantine row of a record that broke a limit: the raw payload, or else a bounded description. */
export function limitQuarantineRow(record: SourceRecord, reason: string): QuarantineRow {
  const errors = [{ ruleId: LIMIT_RULE_ID, message: reason }];
  if (record.raw !== undefined) return { record: undefined, raw: record.raw, errors, position: record.position };
  const note = " (the record is kept as a description: cut at the limits, cycles marked)";
  return { record: describeRecord(record.value), errors: [{ ...errors[0]!, message: reason + note }], position: record.position };
}

function rawOver(raw: string | Uint8Array, max: number): boolean {
  if (typeof raw !== "string") return raw.byteLength > max;
  // UTF-8 takes 1 to 3 bytes per UTF-16 unit: only a text between the two bounds is measured.
  if (raw.length > max) return true;
  return raw.length * 3 > max && Buffer.byteLength(raw, "utf8") > max;
}

function rawBytes(raw: string | Uint8Array): number {
  return typeof raw === "string" ? Buffer.byteLength(raw, "utf8") : raw.byteLength;
}

function overMessage(max: number): string {
  return `the record as JSON is larger than maxRecordBytes (${max} bytes)`;
}

/**
 * Each value counts what its JSON text takes at least: a string its length and quotes, a number
 * one digit, a key its length, quotes and colon, a container its brackets and commas.
 */
function walkValue(v: unknown, depth: number, w: Walk): void {
  switch (typeof v) {
    case "string":
      w.left -= v.length + 2;
      break;
    case "object":
      if (v === null) w.left -= 4;
      else walkObject(v, depth + 1, w);
      break;
    case "undefined":
    case "function":
    case "symbol":
      break;
    default:
      w.left -= 1;
  }
  if (w.left < 0) throw new Breach(overMessage(w.max));
}

function walkObject(o: object, depth: number, w: Walk): void {
  if (depth > MAX_NESTING_DEPTH) {
    throw new Breach(cyclic(w.path, o) ? "the record refers to itself (a cycle)" : `the record is nested more than ${MAX_NESTING_DEPTH} levels deep`);
  }
  w.path[depth] = o;
  if (Array.isArray(o)) {
    w.left -= 1 + o.length;
    // Before the items: a long array of holes would otherwise be walked to its end.
    if (w.left < 0) throw new Breach(overMessage(w.max));
    for (let i = 0; i < o.length; i++) walkValue(o[i], depth, w);
  } else if (o instanceof Date) {
    w.left -= 4;
  } else if (ArrayBuffer.isView(o)) {
    w.left -= o.byteLength;
  } else if (o instanceof Map || o instanceof Set) {
    w.left -= 2;
    for (const x of o.values()) {
      w.left -= 1;
      walkValue(x, depth, w);
    }
  } else {
    w.left -= 2;
    for (const k in o) {
      if (!Object.hasOwn(o, k)) continue;
      // Every key counts at least one, even one JSON leaves out (an undefined value): a shared
      // object reached many times is then bounded by the budget however many such keys it has.
      w.left -= k.length + 1;
      walkValue((o as Record<string, unknown>)[k], depth, w);
    }
  }
}

/** Whether the path down to `o` meets an object twice: the walk went round a cycle. */
function cyclic(path: readonly object[], o: object): boolean {
  const seen = new Set<object>([o]);
  // Index 0 is unused: the record is level 1.
  for (let i = 1; i < path.length; i++) {
    const p = path[i]!;
    if (seen.has(p)) return true;
    seen.add(p);
  }
  return false;
}

interface Describe {
  left: number;
  path: object[];
}

/**
 * A copy of `value` that is safe to store: at most MAX_NESTING_DEPTH levels and about
 * DESCRIPTION_CHARS of JSON, a cycle replaced by "[cycle]", what does not fit replaced by a note.
 */
export function describeRecord(value: unknown): unknown {
  try {
    return describe(value, 0, { left: DESCRIPTION_CHARS, path: [] });
  } catch (e) {
    return `[the record could not be read: ${e instanceof Error ? e.name : typeof e}]`;
  }
}

function describe(v: unknown, depth: number, d: Describe): unknown {
  switch (typeof v) {
    case "string": {
      if (v.length <= d.left) {
        d.left -= v.length + 2;
        return v;
      }
      const kept = v.slice(0, Math.max(0, d.left));
      d.left = 0;
      return `${kept}…[${v.length - kept.length} more characters not kept]`;
    }
    case "function":
    case "symbol":
      return undefined;
    case "object":
      return v === null ? null : describeObject(v, depth, d);
    default:
      d.left -= 1;
      return v;
  }
}

function describeObject(o: object, depth: number, d: Describe): unknown {
  if (o instanceof Date) return o;
  if (ArrayBuffer.isView(o)) {
    if (o instanceof Uint8Array && o.byteLength <= d.left) {
      d.left -= o.byteLength;
      return o;
    }
    return `[${o.byteLength} bytes not kept]`;
  }
  if (d.path.includes(o)) return "[cycle]";
  if (depth >= MAX_NESTING_DEPTH) return `[nested deeper than ${MAX_NESTING_DEPTH} levels: not kept]`;
  d.path.push(o);
  try {
    if (Array.isArray(o) || o instanceof Set) {
      const items: unknown[] = Array.isArray(o) ? o : [...(o as Set<unknown>)];
      const out: unknown[] = [];
      for (let i = 0; i < items.length; i++) {
        if (d.left <= 0) {
          out.push(`[${items.length - i} more items not kept]`);
          break;
        }
        d.left -= 1;
        out.push(describe(items[i], depth + 1, d));
      }
      return out;
    }
    const entries: Array<[string, unknown]> =
      o instanceof Map
        ? [...(o as Map<unknown, unknown>)].map(([k, x]) => [String(k), x])
        : Object.keys(o).map((k) => [k, (o as Record<string, unknown>)[k]]);
    // No prototype: a key named __proto__ is kept as a key.
    const out = Object.create(null) as Record<string, unknown>;
    for (let i = 0; i < entries.length; i++) {
      if (d.left <= 0) {
        out["…"] = `[${entries.length - i} more keys not kept]`;
        break;
      }
      const [k, x] = entries[i]!;
      d.left -= k.length + 3;
      out[k] = describe(x, depth + 1, d);
    }
    return out;
  } finally {
    d.path.pop();
  }
}
