/**
 * spark/jsvalues.py is what SparkStreamSink's executors run for each record: it must read and
 * spell JSON records exactly as this side does (parseJsonRecord, the engines' encoder, jsonText,
 * showValue, the quarantine id's identity). Held to them here, record for record, on the
 * engines' parity corpus written as JSON lines and on lines where JavaScript's JSON differs from
 * Python's. Runs the provisioned Spark runtime's Python, without a SparkSession.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { messageTemplate, showValue } from "../../src/engine/assemble.js";
import { encodeBatch, isPlainObject, lookupField } from "../../src/engine/encode.js";
import { canonicalJson } from "../../src/lake/json.js";
import { executorPlan, type ExecutorPlan } from "../../src/spark/executor-plan.js";
import { jsonText, parseJsonRecord } from "../../src/util/exact-json.js";
import { generateCorpus, parityContract } from "../engine/corpus.js";
import { makeContract } from "../support/contract.js";
import { requireSpark } from "../support/spark.js";

const runtime = requireSpark();

interface PyResult {
  encoded: Array<[number, string | null, ...unknown[]]>;
  explained: Array<[string | null, string, string[], string[]]>;
}

const SCRIPT = `
import json, sys
sys.path.insert(0, sys.argv[1])
import jsvalues
req = json.load(sys.stdin)
x = req["plan"]
# As the executors receive them: pickled by Spark's cloudpickle (closures by value).
from pyspark import cloudpickle
enc = cloudpickle.loads(cloudpickle.dumps(jsvalues.encoder(x)))
ex = cloudpickle.loads(cloudpickle.dumps(jsvalues.explainer(x)))
all_codes = ",".join(str(i) for i in range(len(x["checks"])))
encoded, explained = [], []
for raw, pos in zip(req["lines"], req["positions"]):
    e = enc(raw)
    encoded.append(list(e))
    unknown = e[2 + len(x["fields"]) + len(x["tagWords"])]
    explained.append(list(ex(raw, pos, e[0], e[1], all_codes if e[0] == 0 else None, unknown)))
json.dump({"encoded": encoded, "explained": explained}, sys.stdout)
`;

function runPython(plan: ExecutorPlan, lines: Array<string | null>, positions: Array<string | null>): PyResult {
  const out = spawnSync(runtime.python, ["-c", SCRIPT, join(import.meta.dirname, "..", "..", "spark")], {
    input: JSON.stringify({ plan, lines, positions }),
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
  if (out.status !== 0) throw new Error(`python failed: ${out.stderr}`);
  return JSON.parse(out.stdout) as PyResult;
}

/** Lines on which JavaScript's JSON and Python's differ, or the exact parser and JSON.parse do. */
const AWKWARD = [
  '{"id":-0,"i":-0,"d":-0.0}',
  '{"id":1,"i":1.0,"d":1e2,"m":1E2,"s":1e21}',
  // Integral doubles each side of 2^53 (exact digits below, shortest digits above), -0 as text only.
  '{"id":1,"i":9007199254740991.0,"d":9007199254740992.0,"m":-9007199254740994.0,"s":-5.0}',
  '{"id":2,"i":1e16,"d":-1.5e-7,"m":0.001,"s":"-0","j":"a-0b"}',
  '{"id":3,"d":-0e1,"i":-0.0,"s":"x -0 y"}',
  // Timestamps at and beyond the years whose microseconds need no computing (1700–2200).
  '{"id":4,"ts":"1700-01-01T00:00:00.000Z","dt":"2200-12-31"}',
  '{"id":5,"ts":"1684-06-01T00:00:00.000000Z"}',
  '{"id":6,"ts":"2256-01-01T00:00:00.000Z"}',
  '{"id":7,"ts":"2024-02-30T00:00:00.000Z"}',
  '{"id":8,"ts":"2024-02-29T23:59:59.999999Z","s":"é\\u00e9"}',
  '{"id":1,"s":1e-7,"d":0.000001,"m":123.456e-2}',
  '{"id":9007199254740993,"i":-9223372036854775808,"s":18446744073709551616}',
  '{"id":1152921504606846976,"s":1152921504606846976.0}',
  '{"id":1,"d":1e400,"i":-1e400}',
  '{"id":1,"i":1,"i":2}',
  '{"id":1234567890123456789,"i":1,"i":2}',
  '{"id":1234567890123456789,"i":1,"i":1}',
  '{"id":1234567890123456789,"i":true,"i":1}',
  '{"id":1,"s":"\\ud800","j":{"x":"\\udc00y"},"extra":"\\ud83d\\ude00"}',
  '{"id":1,"s":"\\\\ud800","j":["\\\\ud800","\\ud800"]}',
  '{"id":1,"2":"a","1":"b","b":"c","01":"d","4294967295":"e","4294967294":"f"}',
  '{"id":1,"j":{"2":1,"1":2,"z":{"b":1,"a":[1.5,1e21,-0,9007199254740993]}}}',
  '{"id":1,"s":"x' + "y".repeat(130) + '"}',
  '{"id":1,"s":"' + "🎉".repeat(70) + '"}',
  '{"id":1,"j":' + "[".repeat(40) + "]".repeat(40) + "}",
  '{"id":1,"s":"\\u0000\\u001f\\u007f\\u2028\\u2029\\b\\f\\n\\r\\t\\"\\\\/"}',
  '{"id":1,"__proto__":5,"toString":"x","constructor":1}',
  "NaN",
  '{"id":NaN}',
  '{"id":Infinity}',
  '{"id":1,}',
  "not json",
  "",
  "null",
  "[1,2]",
  "42",
  "9007199254740993",
  '"text"',
  "true",
  " \t\n{\"id\":1}\n ",
  "\ufeff{\"id\":1}",
  null,
];

function linesOf(records: unknown[]): string[] {
  const lines: string[] = [];
  for (const r of records) {
    try {
      const t = jsonText(r);
      if (t !== undefined) lines.push(t);
    } catch {
      // A cycle: no JSON line holds it.
    }
  }
  return lines;
}

function check(contract: typeof parityContract, lines: Array<string | null>): number {
  const { plan, executor } = executorPlan(contract);
  const positions = lines.map((_, i) => (i % 3 === 0 ? null : JSON.stringify({ topic: "t", partition: i % 2, offset: i })));
  const py = runPython(executor, lines, positions);
  const nf = plan.fields.length;
  const words = plan.tagWords.length;
  let objects = 0;
  lines.forEach((raw, i) => {
    const at = `line ${i}: ${raw}`;
    let rec: unknown;
    try {
      rec = parseJsonRecord(raw ?? "null");
    } catch {
      expect(py.encoded[i]![0], at).toBe(1);
      const pos = positions[i] ? canonicalJson(JSON.parse(positions[i])) : null;
      expect(py.explained[i], at).toEqual([null, JSON.stringify([pos, raw === null ? null : `t:${raw}`, null]), [expect.stringMatching(/^not JSON: /)], ["record:not_json"]]);
      return;
    }
    const pos = positions[i] ? canonicalJson(JSON.parse(positions[i])) : null;
    const identity = JSON.stringify([pos, raw === null ? null : `t:${raw}`, canonicalJson(rec)]);
    const [state, , ...rest] = py.encoded[i]!;
    const [record, id, reasons, ruleIds] = py.explained[i]!;
    expect(record, at).toBe(jsonText(rec) ?? null);
    expect(id, at).toBe(identity);
    if (!isPlainObject(rec)) {
      expect(state, at).toBe(2);
      return;
    }
    objects++;
    expect(state, at).toBe(0);
    const enc = encodeBatch([rec], plan);
    expect(rest.slice(0, nf), `${at} (texts)`).toEqual(enc.columns.map((c) => c[0] ?? null));
    expect(rest.slice(nf, nf + words), `${at} (tags)`).toEqual(enc.tags.map((t) => t[0]));
    expect(rest[nf + words], `${at} (unknown keys)`).toBe(enc.unknown[0] ?? null);
    const lake = plan.fields.filter((f) => f.json).map((f) => {
      const text = enc.columns[f.k]![0];
      if (typeof text !== "string") return null;
      const stored = jsonText(parseJsonRecord(text));
      return stored === text ? null : stored;
    });
    expect(rest.slice(nf + words + 1), `${at} (lake json)`).toEqual(lake);
    const expected = plan.checks.map((c) => {
      const t = messageTemplate(c);
      const shown = t.show === "value" ? showValue(lookupField(rec, c.field!)) : t.show === "unknown" ? (enc.unknown[0] ?? "") : "";
      return t.before + shown + t.after;
    });
    expect(reasons, `${at} (reasons)`).toEqual(expected);
    expect(ruleIds, at).toEqual(plan.checks.map((c) => c.ruleId));
  });
  return objects;
}

describe("spark/jsvalues.py reads records as this side does", () => {
  it("on the parity corpus, as JSON lines (two seeds)", () => {
    const lines = [...linesOf(generateCorpus(1500, 7)), ...linesOf(generateCorpus(1500, 8))];
    expect(check(parityContract, lines)).toBeGreaterThan(2500);
  });

  it("on lines where JavaScript's JSON differs from Python's", () => {
    expect(check(parityContract, AWKWARD)).toBeGreaterThan(15);
  });

  it("under unknown_fields: quarantine, which names the unknown keys", () => {
    const contract = makeContract({
      dataset: "strict",
      fields: [
        { name: "id", type: "integer" },
        { name: "s", type: "string" },
      ],
      unknownFields: "quarantine",
    });
    expect(check(contract, AWKWARD)).toBeGreaterThan(15);
  });
});
