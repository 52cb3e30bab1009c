import * as crypto from "node:crypto";
import { jsonText, writeJsonText } from "../util/exact-json.js";

/** JSON text for storage (`null` for what JSON cannot spell); see jsonText. */
export function toJsonText(value: unknown): string {
  return jsonText(value) ?? "null";
}

/**
 * Like `toJsonText` but never throws: a record that cannot be represented (a cycle) is stored as
 * its string form, because a poison record must still reach quarantine (I6).
 */
export function safeJsonText(value: unknown): string {
  try {
    return toJsonText(value);
  } catch {
    return JSON.stringify(String(value));
  }
}

/** Key-sorted JSON, so that equal values hash equally regardless of key order. */
export function canonicalJson(value: unknown): string {
  try {
    return flatCanonicalJson(value) ?? writeJsonText(value, true) ?? "null";
  } catch {
    return JSON.stringify(String(value));
  }
}

/**
 * canonicalJson of a plain object whose values are all strings, numbers, booleans, null or
 * undefined — the shape of most records — without writeJsonText's general machinery (about twice
 * as fast); undefined for anything else. Must spell exactly what writeJsonText spells: quarantine
 * ids are hashes of this text.
 */
function flatCanonicalJson(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return undefined;
  const keys = Object.keys(value);
  const shape = sortedShape(keys);
  let out = "";
  for (let j = 0; j < keys.length; j++) {
    const v = (value as Record<string, unknown>)[keys[shape.order[j]!]!];
    let text: string;
    switch (typeof v) {
      case "string":
        text = JSON.stringify(v);
        break;
      case "number":
        text = Number.isFinite(v) ? JSON.stringify(v) : "null";
        break;
      case "boolean":
        text = v ? "true" : "false";
        break;
      case "undefined":
        continue;
      case "object":
        if (v !== null) return undefined;
        text = "null";
        break;
      default:
        return undefined;
    }
    out += `${out.length > 0 ? "," : ""}${shape.quoted[j]!}${text}`;
  }
  return `{${out}}`;
}

/** A key list's sorted order, with each key spelt as JSON and followed by `:`. */
interface SortedShape {
  keys: readonly string[];
  order: number[];
  quoted: string[];
}

let lastShape: SortedShape = { keys: [], order: [], quoted: [] };

/**
 * The records of one batch nearly always share their keys, in the same order: the sort and the
 * keys' JSON are reused from the previous record while its key list is the same.
 */
function sortedShape(keys: readonly string[]): SortedShape {
  const last = lastShape;
  if (last.keys.length === keys.length && keys.every((k, i) => k === last.keys[i])) return last;
  const order = keys.map((_, i) => i).sort((a, b) => (keys[a]! < keys[b]! ? -1 : 1));
  lastShape = { keys, order, quoted: order.map((i) => `${JSON.stringify(keys[i])}:`) };
  return lastShape;
}

/** One-shot hashing (Node ≥ 20.12) is about three times faster than a Hash object for short texts. */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: "hex") => string }).hash;

export function sha256Hex(text: string): string {
  return oneShotHash ? oneShotHash("sha256", text, "hex") : crypto.createHash("sha256").update(text).digest("hex");
}

/**
 * JSON text DuckDB can read. JSON.stringify writes a lone UTF-16 surrogate as a `\udXXX`
 * escape, which DuckDB's parser refuses; such strings are stored with U+FFFD instead, as the
 * appender's UTF-8 encoding did. The search is one scan of the text; the replacer pass runs
 * only when it finds something.
 */
export function jsonDocument(value: unknown): string {
  const text = JSON.stringify(value);
  return text.includes("\\ud") ? JSON.stringify(value, (_key, v: unknown) => (typeof v === "string" ? toWellFormed(v) : v)) : text;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function toWellFormed(s: string): string {
  return s.replace(LONE_SURROGATE, "\uFFFD");
}
