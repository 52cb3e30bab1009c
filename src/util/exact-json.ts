/**
 * Exact JSON, both ways. The one JSON parse of record payloads, for every source that receives
 * bytes or text (files, queues, Kafka, SSE, WebSocket, webhook, HTTP polling).
 *
 * JSON.parse rounds an integer beyond 2^53 to the nearest double: `9007199254740993` becomes
 * …992, and under merge that row overwrites another. Text that may hold such an integer (a run
 * of 16 or more digits, which every integer beyond 2^53 has and few ordinary records do) is
 * parsed by lossless-json instead, which hands each number's own text to `exactNumber`: an
 * integer JSON.parse would round becomes a `bigint` with every digit, which the engines and the
 * lake keep exact (long, decimal, string and json fields, undeclared keys, quarantine); every
 * other number is what JSON.parse gives. Ordinary records pay a scan of one character in sixteen.
 *
 * The writer (`jsonText`) spells a bigint with all its digits and never recurses without a bound.
 *
 * Not exact: a number with a fraction or an exponent and more significant digits than a double
 * holds is rounded as JSON.parse rounds it (docs/guarantees.md, "Numbers").
 */
import { parse as losslessParse } from "lossless-json";
import { JsonValueError } from "../errors.js";

/** Integers beyond 2^53 have 16 digits or more; shorter ones are safe. */
const RUN = 16;
const INTEGER = /^-?\d+$/;

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/**
 * Whether `text` holds a run of 16 digits. Looks at every 16th character only, and around it
 * only when it is a digit: about a tenth of JSON.parse's time on an ordinary record, a third of
 * what /\d{16}/ takes (bench/parse.ts).
 */
export function hasLongDigitRun(text: string): boolean {
  const n = text.length;
  let i = RUN - 1;
  while (i < n) {
    if (!isDigit(text.charCodeAt(i))) {
      i += RUN;
      continue;
    }
    // Back to the start of the digit run that holds i (at most RUN - 1 steps).
    let start = i;
    while (start > i - (RUN - 1) && isDigit(text.charCodeAt(start - 1))) start--;
    if (start === i - (RUN - 1)) return true;
    // A run of RUN digits that starts at `start` or later holds the character at start + RUN - 1.
    i = start + RUN - 1;
  }
  return false;
}

function exactNumber(text: string): number | bigint {
  const n = Number(text);
  return Number.isSafeInteger(n) || !INTEGER.test(text) ? n : BigInt(text);
}

/**
 * JSON text as a value, integers beyond 2^53 as `bigint`. Throws a SyntaxError when the text is
 * not JSON (both paths), with the parser's message.
 */
export function parseJsonRecord(text: string): unknown {
  if (!hasLongDigitRun(text)) return JSON.parse(text);
  // The careful parser is stricter about duplicate keys than JSON.parse (it refuses two values
  // for one key rather than keeping the last): such a record is quarantined with that reason.
  try {
    return losslessParse(text, null, exactNumber);
  } catch (err) {
    if (err instanceof SyntaxError) throw err;
    throw new SyntaxError((err as Error).message);
  }
}

/**
 * Deepest nesting the careful writer follows. Records are checked for depth before they reach
 * the lake (src/pipeline/limits.ts allows far less); this bound only keeps the writer's own
 * recursion, a few frames per level, well inside the stack whatever it is given.
 */
export const MAX_JSON_DEPTH = 512;

/**
 * JSON text of a value: JSON.stringify first (the common case, and the fastest); when it throws
 * (a bigint, a cycle, nesting deeper than its stack) the careful writer, which keeps a bigint
 * exact as a JSON number, Date as its ISO string and bytes as base64. Undefined where
 * JSON.stringify gives undefined. Throws JsonValueError on a cycle or nesting beyond
 * MAX_JSON_DEPTH.
 */
export function jsonText(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    // the careful writer decides
  }
  return writeJsonText(value, false);
}

export function bytesToBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/**
 * The careful writer; `sortKeys` writes object keys in sorted order (canonical JSON). `stack`
 * holds the objects being written, for the cycle and depth checks.
 */
export function writeJsonText(value: unknown, sortKeys: boolean, stack: object[] = []): string | undefined {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : "null";
    case "boolean":
      return value ? "true" : "false";
    case "bigint":
      return value.toString();
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
    case "object": {
      if (value === null) return "null";
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? "null" : JSON.stringify(value.toISOString());
      if (value instanceof Uint8Array) return JSON.stringify(bytesToBase64(value));
      if (stack.includes(value)) throw new JsonValueError("the value refers to itself (a cycle): it cannot be written as JSON");
      if (stack.length >= MAX_JSON_DEPTH) {
        throw new JsonValueError(`the value is nested more than ${MAX_JSON_DEPTH} levels deep: it is not written as JSON`);
      }
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      stack.push(value);
      try {
        // Inside the push: a toJSON that returns new objects each time still counts as depth.
        if (typeof toJSON === "function") return writeJsonText((toJSON as () => unknown).call(value), sortKeys, stack);
        if (Array.isArray(value)) {
          return `[${value.map((v) => writeJsonText(v, sortKeys, stack) ?? "null").join(",")}]`;
        }
        if (value instanceof Map) {
          return writeJsonText(Object.fromEntries(value), sortKeys, stack);
        }
        if (value instanceof Set) return writeJsonText([...value], sortKeys, stack);
        const keys = Object.keys(value);
        if (sortKeys) keys.sort();
        const parts: string[] = [];
        for (const k of keys) {
          const text = writeJsonText((value as Record<string, unknown>)[k], sortKeys, stack);
          if (text !== undefined) parts.push(`${JSON.stringify(k)}:${text}`);
        }
        return `{${parts.join(",")}}`;
      } finally {
        stack.pop();
      }
    }
  }
  return undefined;
}
