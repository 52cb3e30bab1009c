/**
 * The cost of exact integers on ordinary records: JSON.parse against parseJsonRecord (the one
 * parse of every byte source) over the same order-event lines, alternating, 5 rounds each.
 *
 *   npm run bench:parse                  # 200,000 lines
 *   npm run bench:parse -- --lines 1000000
 *
 * Prints one JSON line per parser: {parser, lines, medianMs, nsPerLine}, then the ratio
 * parseJsonRecord / JSON.parse (1.0 = no cost). A second pair does the same over lines that
 * each carry a 64-bit id beyond 2^53 (the careful path).
 */
import { orderEvents } from "../examples/orders.js";
import { parseJsonRecord } from "../src/util/exact-json.js";

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const LINES = arg("--lines", 200_000);
const ROUNDS = 5;

function time(lines: readonly string[], parse: (t: string) => unknown): number {
  const t0 = process.hrtime.bigint();
  let keep = 0;
  for (const l of lines) if (parse(l) !== null) keep++;
  if (keep !== lines.length) throw new Error("a line parsed to null");
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function pair(label: string, lines: readonly string[]): void {
  const plain: number[] = [];
  const exact: number[] = [];
  time(lines, JSON.parse);
  time(lines, parseJsonRecord);
  for (let r = 0; r < ROUNDS; r++) {
    plain.push(time(lines, JSON.parse));
    exact.push(time(lines, parseJsonRecord));
  }
  for (const [parser, ms] of [
    ["JSON.parse", median(plain)],
    ["parseJsonRecord", median(exact)],
  ] as const) {
    console.log(JSON.stringify({ case: label, parser, lines: lines.length, medianMs: Math.round(ms), nsPerLine: Math.round((ms * 1e6) / lines.length) }));
  }
  console.log(JSON.stringify({ case: label, ratio: Number((median(exact) / median(plain)).toFixed(3)) }));
}

const ordinary = Array.from(orderEvents(LINES), (e) => JSON.stringify(e));
pair("ordinary", ordinary);
pair(
  "64-bit ids",
  ordinary.map((l, i) => l.replace(/^\{"order_id":\d+/, `{"order_id":${9007199254740993n + BigInt(i)}`)),
);
