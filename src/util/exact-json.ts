/**
 * The one JSON parse of record payloads, for every source that receives bytes or text (files,
 * queues, Kafka, SSE, WebSocket, webhook, HTTP polling).
 *
 * JSON.parse rounds an integer beyond 2^53 to the nearest double: `9007199254740993` becomes
 * …992, and under merge that row overwrites another. Text that may hold such an integer (a run
 * of 16 or more digits, which every integer beyond 2^53 has and few ordinary records do) is
 * parsed by lossless-json instead, which hands each number's own text to `exactNumber`: an
 * integer JSON.parse would round becomes a `bigint` with every digit, which the engines and the
 * lake keep exact (long, decimal, string and json fields, undeclared keys, quarantine); every
 * other number is what JSON.parse gives. Ordinary records pay a scan of one character in sixteen.
 *
 * Not exact: a number with a fraction or an exponent and more significant digits than a double
 * holds is rounded as JSON.parse rounds it (docs/guarantees.md, "Numbers").
 */
import { parse as losslessParse, stringify as losslessStringify } from "lossless-json";

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
 * JSON.stringify that writes a `bigint` as its digits (JSON.stringify refuses it); undefined
 * where JSON.stringify gives undefined; throws on a cycle.
 */
export function jsonText(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof TypeError) || !/BigInt/i.test(err.message)) throw err;
    return losslessStringify(value);
  }
}
