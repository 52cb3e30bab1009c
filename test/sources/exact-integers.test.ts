/**
 * Integers beyond 2^53 keep every digit from the bytes a source receives to the lake and to
 * quarantine (issue 18 §1): one JSON parsing path for every byte source (parseJsonRecord), on both
 * engines, under merge (two ids one apart stay two rows), in undeclared keys kept under
 * `unknown_fields: allow`, and in json fields.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { decodeBody } from "../../src/sources/core/decode.js";
import { decodeEventData } from "../../src/sources/core/common.js";
import { hasLongDigitRun, parseJsonRecord } from "../../src/util/exact-json.js";
import { mulberry32 } from "../support/random.js";
import { FileSource } from "../../src/sources/index.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), "ll-exact-"));
  dirs.push(d);
  return d;
};

describe("parseJsonRecord", () => {
  it("keeps integers beyond 2^53 exact as bigint, and everything else as JSON.parse gives it", () => {
    expect(parseJsonRecord('{"id":9007199254740993,"n":-9223372036854775808,"big":123456789012345678901234567890}')).toEqual({
      id: 9007199254740993n,
      n: -9223372036854775808n,
      big: 123456789012345678901234567890n,
    });
    const ordinary = '{"a":1,"b":-2.5,"c":"9007199254740993","d":[1e21,1.5e300,0.1],"e":{"f":null,"g":true},"h":9007199254740991}';
    expect(parseJsonRecord(ordinary)).toEqual(JSON.parse(ordinary));
    // Safe integers stay numbers even on the careful path (a long digit run elsewhere sends it there).
    expect(parseJsonRecord('{"s":"12345678901234567890","i":42,"x":12345678901234567.5}')).toEqual({
      s: "12345678901234567890",
      i: 42,
      x: Number("12345678901234567.5"), // rounded, as JSON.parse rounds it
    });
    expect(parseJsonRecord('{"k":"\\ud800"}')).toEqual(JSON.parse('{"k":"\\ud800"}'));
  });

  it("finds a run of 16 digits wherever /\\d{16}/ does (the scan that picks the careful path)", () => {
    const rand = mulberry32(18);
    for (let t = 0; t < 20_000; t++) {
      // Mostly digits, so that runs of every length near 16 occur at every offset.
      const len = Math.floor(rand() * 60);
      let s = "";
      for (let i = 0; i < len; i++) s += rand() < 0.9 ? String(Math.floor(rand() * 10)) : ',"x":';
      expect(hasLongDigitRun(s), s).toBe(/\d{16}/.test(s));
    }
  });

  it("throws a SyntaxError on text that is not JSON, on both paths", () => {
    expect(() => parseJsonRecord('{"a":')).toThrow(SyntaxError);
    expect(() => parseJsonRecord('{"a":12345678901234567890,}')).toThrow(SyntaxError);
    expect(() => parseJsonRecord("NaN")).toThrow(SyntaxError);
  });

  it("is what every byte source decodes with: queue bodies, Kafka values, SSE and WebSocket data", () => {
    expect(decodeBody('{"id":18446744073709551615}')).toEqual({ value: { id: 18446744073709551615n } });
    expect(decodeBody(Buffer.from("[9007199254740993]"))).toEqual({ value: { data: [9007199254740993n] } });
    expect(decodeEventData('{"id":9007199254740993}')).toEqual({ id: 9007199254740993n });
  });
});

const CONTRACT = (format: string) => `
version: "1.0"
dataset: ids
primary_key: [id]
model:
  fields:
    - { name: id, type: long, required: true }
    - { name: ref, type: "decimal(38,0)" }
    - { name: label, type: string }
    - { name: doc, type: json }
quality:
  row_rules:
    - { name: positive, sql: "id > 0" }
materialization: { strategy: merge, format: ${format} }
schema_policy: { unknown_fields: allow }
`;

/** JSON text with a bigint spelt `<digits>n`, so a test can tell it from a rounded number. */
const show = (v: unknown): string => JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? `${x}n` : x));

const LINES = [
  '{"id":9007199254740992,"ref":99999999999999999999999999999999999999,"label":9007199254740993,"doc":{"n":9007199254740993}}',
  '{"id":9007199254740993,"ref":12345678901234567890,"label":"b","extra":{"deep":[18446744073709551617]}}',
  '{"id":9007199254740995,"label":"c"}',
  // A long beyond int64 is no long: quarantined, its raw line kept with every digit.
  '{"id":9223372036854775808,"label":"too big"}',
  '{"id":-9007199254740993,"label":"negative"}',
];

describe.each([
  ["duckdb", "duckdb"],
  ["polars", "parquet"],
])("a JSON-lines file through StreamSink, engine %s, %s lake", (engine, format) => {
  it("stores every digit: ids one apart stay two rows under merge; quarantine keeps the raw line", async () => {
    const dir = tmp();
    const file = join(dir, "ids.jsonl");
    writeFileSync(file, LINES.join("\n") + "\n");
    const contract = parseContract(CONTRACT(format), "ids.yaml");
    const targetPath = join(dir, "lake");
    const summary = await new StreamSink(contract, new FileSource(file), { targetPath, checkpoint: "memory", engine: engine as "duckdb" | "polars" }).run("available_now");
    expect(summary).toMatchObject({ sourceCount: 5, goodCount: 3, badCount: 2 });

    const rows = await readTable(contract, { targetPath });
    const byId = new Map(rows.map((r) => [String(r.id), r]));
    expect([...byId.keys()].sort()).toEqual(["9007199254740992", "9007199254740993", "9007199254740995"]);
    expect(String(byId.get("9007199254740992")!.ref)).toBe("99999999999999999999999999999999999999");
    expect(String(byId.get("9007199254740993")!.ref)).toBe("12345678901234567890");
    expect(byId.get("9007199254740992")!.label).toBe("9007199254740993");
    expect(show(byId.get("9007199254740992")!.doc)).toBe('{"n":"9007199254740993n"}');
    expect(show(byId.get("9007199254740993")!.extra)).toBe('{"deep":["18446744073709551617n"]}');

    const bad = await readQuarantine(contract, { targetPath });
    expect(bad.map((b) => b.raw).sort()).toEqual([LINES[3], LINES[4]].sort());
    const records = bad.map((b) => show(b.record));
    expect(records.join("\n")).toMatch(/9223372036854775808n/);
    expect(records.join("\n")).toMatch(/-9007199254740993n/);
  });
});
