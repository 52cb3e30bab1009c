import { decodeCursor } from "../src/checkpoint/codec.js";

/**
 * A cursor as people (and Temporal's JSON payloads) can read it: bigint as a decimal string,
 * Date as ISO-8601. Workflow-safe.
 */
export function decodeCursorForDisplay(encoded: string): unknown {
  return plain(decodeCursor(encoded));
}

function plain(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return value;
}
