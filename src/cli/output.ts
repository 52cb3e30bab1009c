/**
 * What a command prints on stdout: text for people by default, or with `--json` one JSON document
 * for scripts (as `lakelogic run --json` and the Temporal CLI do).
 */
import type { CliIO } from "./types.js";

export const JSON_FLAG = { json: { type: "boolean" } } as const;
export const JSON_HELP = "      --json               print one JSON document instead of text";

/** `value` as JSON text, bigints as their digits (JSON.stringify refuses them). */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
}

/** `value` as one JSON line when `json`, else the text `text()` spells. */
export function printResult(io: CliIO, json: boolean | undefined, value: unknown, text: () => string): void {
  io.stdout(json ? toJson(value) + "\n" : text());
}

function shown(v: unknown): string {
  if (v instanceof Date) return v.toISOString();
  if (v === null || v === undefined) return "-";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return v.toString();
  return toJson(v) ?? "-";
}

/** An object as aligned `name  value` lines, nested values as compact JSON. */
export function fieldsText(o: Readonly<Record<string, unknown>>, indent = ""): string {
  const keys = Object.keys(o).filter((k) => o[k] !== undefined);
  const width = Math.max(0, ...keys.map((k) => k.length));
  return keys.map((k) => `${indent}${k.padEnd(width)}  ${shown(o[k])}\n`).join("");
}
