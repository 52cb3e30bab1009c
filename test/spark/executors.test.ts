/**
 * SparkStreamSink validates on the executors: one Spark application (local[2]) streams JSON files
 * of the engines' parity corpus, plus lines where JavaScript's JSON and Python's differ, into a
 * Delta table merged on `id`, with `spark.driver.maxResultSize` at 1 MiB, far below one
 * micro-batch (no record can be collected on the driver). The Delta table and its quarantine are
 * then held to what the DuckDB engine gives for the same records, batch by batch: the same good
 * rows with the same values (64-bit integers exact), the same bad rows with the same reasons,
 * rule ids, records and quarantine ids, the same rule counts; and in = good + bad + superseded.
 */
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Contract, FieldSpec } from "../../src/contract/types.js";
import { createEngine } from "../../src/engine/index.js";
import type { Engine, RuleCount, ValidationResult } from "../../src/engine/types.js";
import { quarantineIds } from "../../src/lake/quarantine.js";
import type { QuarantineRow } from "../../src/lake/types.js";
import { DeltaReader, SparkStreamSink, type SparkRunSummary } from "../../src/spark/stream-sink.js";
import { jsonText, parseJsonRecord } from "../../src/util/exact-json.js";
import { generateCorpus, parityContract } from "../engine/corpus.js";
import { makeContract } from "../support/contract.js";
import { requireSpark } from "../support/spark.js";

requireSpark();

const base = makeContract({ dataset: "parity_exec", fields: parityContract.fields, rowRules: parityContract.rowRules, primaryKey: ["id"], unknownFields: "allow" });
const contract: Contract = { ...base, materialization: { ...base.materialization, strategy: "merge" } };

/** Lines on which the two languages' JSON differ (test/spark/jsvalues.test.ts has more). */
const AWKWARD = [
  '{"id":9007199254740995,"i":2,"s":18446744073709551616,"m":"12.5"}',
  '{"id":1152921504606846977,"s":1152921504606846976.0,"d":-0.0,"m0":-0}',
  '{"id":-9223372036854775807,"i":1.0,"d":1e2,"s":1e21,"j":{"2":1,"1":[1e21,-0,9007199254740993]}}',
  '{"id":900000012,"i":1,"i":2,"s":"\\ud800","j":"\\udc00"}',
  '{"id":1234567890123456789,"i":1,"i":2}',
  '{"id":900000013,"d":1e400,"ts":"2024-02-08T09:01:53.283Z","dt":"2024-02-29"}',
  '{"id":900000014,"s":"' + "🎉".repeat(70) + '"}',
  '{"id":NaN}',
  "not json",
  "[1,2]",
  "9007199254740993",
  "null",
];

function lines(records: unknown[]): string[] {
  return records.flatMap((r) => {
    try {
      const t = jsonText(r);
      return t === undefined ? [] : [t];
    } catch {
      return [];
    }
  });
}

/** A good row's value as the Delta table's text for it (see `selectText`). */
function text(v: unknown, f: FieldSpec): string | null {
  if (v === null || v === undefined) return null;
  if (f.type === "json") return jsonText(v) ?? null;
  const s = typeof v === "string" ? v : typeof v === "number" || typeof v === "bigint" || typeof v === "boolean" ? String(v) : (jsonText(v) ?? "");
  if (f.type === "double") return Object.is(v, -0) ? "-0" : s;
  if (f.type === "timestamp") return s.replace(/Z$/, "").padEnd(26, "0");
  return s;
}

/** Every column read back as exact text (doubles as JavaScript spells them, from their bits). */
const selectText = contract.fields.map((f) => {
  const c = `\`${f.name}\``;
  switch (f.type) {
    case "double":
      return `CAST(${c} AS STRING) AS ${c}`;
    case "timestamp":
      return `date_format(${c}, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS") AS ${c}`;
    default:
      return `CAST(${c} AS STRING) AS ${c}`;
  }
});

interface Expected {
  good: Map<string, Record<string, string | null>>;
  bad: Array<{ quarantine_id: string; record: string | null; raw: string | null; reasons: string[]; rule_ids: string[] }>;
  counts: { sourceCount: number; goodCount: number; badCount: number; supersededCount: number; ruleCounts: RuleCount[] };
}

/** What StreamSink's engine makes of one micro-batch (one file), as SparkStreamSink must write it. */
async function expectBatch(engine: Engine, batch: string[], file: string, into: Expected): Promise<ValidationResult> {
  const records: unknown[] = [];
  const origin: number[] = [];
  const undecodable: QuarantineRow[] = [];
  const position = { file };
  batch.forEach((t, i) => {
    try {
      records.push(parseJsonRecord(t));
      origin.push(i);
    } catch {
      undecodable.push({ record: undefined, raw: t, position, errors: [{ ruleId: "record:not_json", message: "not JSON" }] });
    }
  });
  const result = await engine.validate(records, contract);
  const bad: QuarantineRow[] = [
    ...undecodable,
    ...result.bad.map((b) => ({ record: b.record, raw: batch[origin[b.index]!], position, errors: b.errors })),
  ];
  const ids = quarantineIds(bad);
  bad.forEach((b, i) =>
    into.bad.push({
      quarantine_id: ids[i]!,
      record: b.record === undefined ? null : (jsonText(b.record) ?? null),
      raw: typeof b.raw === "string" ? b.raw : null,
      reasons: b.errors.map((e) => e.message),
      rule_ids: b.errors.map((e) => e.ruleId),
    }),
  );
  for (const row of result.good) {
    into.good.set(String(row["id"]), Object.fromEntries(contract.fields.map((f) => [f.name, text(row[f.name], f)])));
  }
  return result;
}

let dir: string;
let summary: SparkRunSummary;
let expected: Expected;
let perBatch: Array<{ sourceCount: number; goodCount: number; badCount: number; supersededCount: number; ruleCounts: RuleCount[] }>;
let reader: DeltaReader;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ll-spark-exec-"));
  const src = join(dir, "in");
  await mkdir(src);
  // Two files, two micro-batches: the corpus (1.7 MB, over 1 MiB), then the awkward lines.
  const files = [lines(generateCorpus(9000, 11)).concat(lines(generateCorpus(3000, 12))), AWKWARD];
  const names = ["a.json", "b.json"];
  for (let i = 0; i < files.length; i++) await writeFile(join(src, names[i]!), files[i]!.join("\n") + "\n");
  expect(files[0]!.join("\n").length).toBeGreaterThan(1.5 * 1024 * 1024);

  const duck = await createEngine("duckdb");
  expected = { good: new Map(), bad: [], counts: { sourceCount: 0, goodCount: 0, badCount: 0, supersededCount: 0, ruleCounts: [] } };
  perBatch = [];
  try {
    for (let i = 0; i < files.length; i++) {
      const before = expected.bad.length;
      const r = await expectBatch(duck, files[i]!, `file://${join(src, names[i]!)}`, expected);
      perBatch.push({ sourceCount: files[i]!.length, goodCount: r.goodCount, badCount: expected.bad.length - before, supersededCount: r.supersededCount, ruleCounts: r.ruleCounts });
    }
  } finally {
    await duck.close();
  }

  summary = await new SparkStreamSink(contract, {
    source: { type: "json", path: src, maxFilesPerTrigger: 1 },
    checkpointLocation: join(dir, "checkpoint"),
    targetPath: join(dir, "lake", "parity"),
    conf: { "spark.driver.maxResultSize": "1m" },
  }).run();
  reader = await DeltaReader.start();
}, 900_000);

afterAll(async () => {
  await reader?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("SparkStreamSink on the executors", () => {
  it("commits micro-batches larger than spark.driver.maxResultSize, with the engine's counts", () => {
    expect(summary.batches).toBe(2);
    // Spark orders a micro-batch's files by its own rules: match the batches by their size.
    const got = [...summary.reports].sort((a, b) => b.sourceCount - a.sourceCount);
    got.forEach((r, i) => {
      const want = perBatch[i]!;
      expect(r.sourceCount).toBe(want.sourceCount);
      expect(r.goodCount).toBe(want.goodCount);
      expect(r.badCount).toBe(want.badCount);
      expect(r.supersededCount).toBe(want.supersededCount);
      expect(r.ruleCounts).toEqual(want.ruleCounts);
      expect(r.sourceCount).toBe(r.goodCount + r.badCount + r.supersededCount);
    });
    expect(perBatch[0]!.goodCount).toBeGreaterThan(300);
    expect(perBatch[0]!.badCount).toBeGreaterThan(1000);
    expect(perBatch[0]!.supersededCount).toBeGreaterThan(0);
  });

  it("writes the engine's good rows, values exact", async () => {
    const rows = await reader.read(summary.targetPath, [], selectText);
    const got = new Map(rows.map((r) => [String(r["id"]), r]));
    expect(got.size).toBe(rows.length);
    expect([...got.keys()].sort()).toEqual([...expected.good.keys()].sort());
    for (const [id, want] of expected.good) {
      const row = got.get(id)!;
      for (const f of contract.fields) {
        const v = row[f.name] ?? null;
        // Doubles: Spark spells them as Java does; compared as the same 64-bit value.
        if (f.type === "double" && v !== null && want[f.name] !== null) expect(Object.is(Number(v), Number(want[f.name])), `${id}.${f.name}: ${JSON.stringify(v)}`).toBe(true);
        else expect(v, `${id}.${f.name}`).toBe(want[f.name]);
      }
    }
    // Keys beyond 2^53 arrived and stayed distinct from their rounded neighbours.
    const beyond = [...got.keys()].filter((k) => /^-?\d+$/.test(k) && (BigInt(k) > 2n ** 53n || BigInt(k) < -(2n ** 53n)));
    expect(beyond.length, beyond.join(", ")).toBeGreaterThan(0);
  });

  it("quarantines the engine's bad rows with its reasons, rule ids, records and ids", async () => {
    const rows = (await reader.read(summary.quarantinePath, [])) as Expected["bad"];
    expect(rows).toHaveLength(expected.bad.length);
    const byId = new Map(rows.map((r) => [r.quarantine_id, r]));
    expect(byId.size).toBe(rows.length);
    for (const want of expected.bad) {
      const row = byId.get(want.quarantine_id);
      expect(row, `quarantine row for ${want.raw}`).toBeDefined();
      expect(row!.raw).toBe(want.raw);
      expect(row!.record).toBe(want.record);
      expect(row!.rule_ids).toEqual(want.rule_ids);
      // A line that is not JSON: the parser's own words differ between the languages.
      if (want.rule_ids[0] === "record:not_json") expect(row!.reasons[0]).toMatch(/^not JSON: /);
      else expect(row!.reasons).toEqual(want.reasons);
    }
  });
});
