/**
 * Records handed to the DuckDB engine as JSON text (src/engine/duckdb-json.ts) give exactly what
 * the same records give decoded by JavaScript: the same good rows and values, the same bad rows
 * with the same records and reasons, the same counts. The corpus is the parity corpus written as
 * JSON lines, plus each known difference between DuckDB's JSON reader and JSON.parse.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/index.js";
import type { Engine } from "../../src/engine/types.js";
import type { Contract } from "../../src/contract/types.js";
import { validateRecords, type ValidatedBatch } from "../../src/pipeline/validate.js";
import { JsonTextRecord } from "../../src/sources/core/json-text-record.js";
import { jsonText } from "../../src/util/exact-json.js";
import { generateCorpus, parityContract } from "./corpus.js";
import { makeContract } from "../support/contract.js";

let duck: Engine;
/** The same engine without its JSON reader: every record is decoded by JavaScript. */
let decoding: Engine;
beforeAll(async () => {
  duck = await createEngine("duckdb");
  decoding = { name: duck.name, validate: (r, c) => duck.validate(r, c), close: async () => undefined };
});
afterAll(async () => {
  await duck.close();
});

const deep = (n: number): string => `{"s":"x","j":${"[".repeat(n)}1${"]".repeat(n)}}`;

/** Each a line on which DuckDB's reader and JSON.parse could part ways. */
const DIFFERENCES = [
  '{"id":1,"d":NaN}',
  '{"id":2,"d":Infinity}',
  '{"id":3,"d":-Infinity}',
  '{"id":4,"s":"a","s":"b"}',
  '{"id":5,"i":1,}',
  '{"id":6,"j":[1,2,]}',
  '{"id":7,"i":1.0,"d":1.0,"s":1.0}',
  '{"id":8,"i":1e2,"d":1.5e3,"s":2E-3}',
  '{"id":9,"i":-0,"d":-0,"s":-0}',
  '{"id":10,"d":-0.0,"s":-0.0,"m":-0.0}',
  '{"id":11,"d":12.340,"s":12.340,"m":12.340}',
  '{"id":12,"i":9007199254740993,"s":9007199254740993,"m":9007199254740993}',
  '{"id":13,"i":123456789012345678901,"s":123456789012345678901}',
  '{"id":14,"i":18446744073709551615,"s":-9223372036854775809}',
  '{"id":15,"s":"\\ud800"}',
  '{"id":16,"\\udc00":1}',
  '{"id":17,"s":"\\ud83d\\ude00 pair"}',
  deep(62),
  deep(63),
  deep(64),
  deep(80),
  '{"id":18,"__proto__":{"x":1}}',
  '{"id":19,"2":1,"extra":2,"1":3}',
  '{"id":20,\f"s":"ff"}',
  '{"id":21,\u000b"s":"vt"}',
  "[1,2]",
  '"a string"',
  "null",
  "42",
  '{"id":22,',
  "{'id':23}",
  '{"id":24,"":1,"":2}',
  '{"id":25,"":"empty key"}',
  '{"id":26,"j":{"a":1,"a":2},"big":12345678901234567}',
  '{"id":27,"j":{"a":1,"a":2}}',
  '{"id":28,"j":"text","s":"nul\\u0000char"}',
  '{"id":29,"j":12.5,"d":0.1}',
  '{"id":30,"ts":"2024-01-01T10:00:00.000Z","dt":"2024-02-30"}',
  '{"id":31,"ts":"2024-02-30T10:00:00.000Z"}',
  '{"id":32,"ts":1700000000000,"b":1,"i":true}',
  '{"id":33,"ts":"2024-01-01T10:00:00.123456Z","b":"true","d":"1e3"}',
  '{"id":34,"d":0.00001,"s":0.00001}',
  '{"id":35,"d":123456789012345.6,"s":1234567890123456.7}',
  '{"id":36,"s_alias":"from alias"}',
  '{"id":37,"s":null,"s_alias":"not used"}',
  '{"id":38,"s_alias":"x","s":"own"}',
  '{"id":39,"i":"42","m":"12.345","m0":99999,"b":false}',
  '  {"id":40,"s":"spaces around"}\t',
  '{"id":41,"toString":1,"constructor":"c"}',
  '{"id":42,"s":"é\\u00e9\\n\\/"}',
  '{"id":43,"s":{"nested":1},"i":[1]}',
  '{"id":44,"d":1e400}',
  '{"id":45,"i":-9223372036854775808,"m0":-0.5}',
  '{"id":46,"d":5e-324,"s":1e21}',
  '{"id":47,"d":0.30000000000000004,"s":100.0}',
  '{"id": 48 , "s" : "spaced" }',
];

/** The parity corpus as JSON lines (records JSON cannot spell are left out). */
function corpusLines(count: number, seed: number): string[] {
  const out: string[] = [];
  for (const rec of generateCorpus(count, seed)) {
    let text: string | undefined;
    try {
      text = jsonText(rec);
    } catch {
      continue;
    }
    if (text !== undefined && !text.includes("\n")) out.push(text);
  }
  return out;
}

const asRecords = (lines: readonly string[]): JsonTextRecord[] => lines.map((l, i) => new JsonTextRecord(l, { line: i + 1, offset: i * 100 }, l.length + 1));

function comparable(b: ValidatedBatch): unknown {
  return {
    sourceCount: b.sourceCount,
    goodCount: b.goodCount,
    supersededCount: b.supersededCount,
    good: b.good,
    bad: b.bad.map((r) => ({ record: r.record, raw: r.raw, errors: r.errors, position: r.position })),
    ruleCounts: b.ruleCounts,
    datasetRules: b.datasetRules,
    goodColumns: b.goodColumns ? { count: b.goodColumns.count, keys: b.goodColumns.keys } : undefined,
  };
}

async function both(contract: Contract, lines: readonly string[]): Promise<{ text: ValidatedBatch; decoded: ValidatedBatch; taken: number }> {
  const screened = await duck.screenJson!(lines, contract);
  const text = await validateRecords(duck, contract, asRecords(lines));
  const decoded = await validateRecords(decoding, contract, asRecords(lines));
  return { text, decoded, taken: lines.length - (screened?.length ?? lines.length) };
}

const quarantining = makeContract({ ...parityInput(), unknownFields: "quarantine" });
const keyed: Contract = { ...quarantining, materialization: { ...quarantining.materialization, strategy: "merge" } };
/** Without the json field, whose values' JSON text JavaScript spells (such lines are declined). */
const scalar = makeContract({
  ...parityInput(),
  fields: parityInput().fields!.filter((f) => f.type !== "json"),
  rowRules: parityInput().rowRules!.filter((r) => !("field" in r) || r.field !== "j"),
  datasetRules: parityInput().datasetRules!.filter((r) => !("field" in r) || r.field !== "j"),
  unknownFields: "quarantine",
});

function parityInput(): Parameters<typeof makeContract>[0] {
  return {
    dataset: parityContract.dataset,
    fields: parityContract.fields.map((f) => ({ ...f })),
    rowRules: parityContract.rowRules.map((r) => ({ ...r })),
    datasetRules: parityContract.datasetRules.map((r) => ({ ...r })),
    primaryKey: ["id"],
  };
}

describe("records given to the DuckDB engine as JSON text", () => {
  for (const [name, contract] of [
    ["unknown keys quarantined", quarantining],
    ["merge on the primary key", keyed],
    ["no json field", scalar],
  ] as const) {
    it(`gives what JavaScript decoding gives on each known difference (${name})`, async () => {
      const { text, decoded } = await both(contract, DIFFERENCES);
      expect(comparable(text)).toEqual(comparable(decoded));
      // Each line alone too: no line's outcome leans on its neighbours.
      for (const line of DIFFERENCES) {
        const one = await both(contract, [line]);
        expect(comparable(one.text), line).toEqual(comparable(one.decoded));
      }
    });

    for (const seed of [1, 2]) {
      it(`gives what JavaScript decoding gives on the parity corpus (${name}, seed ${seed})`, async () => {
        const lines = corpusLines(3000, seed);
        const { text, decoded, taken } = await both(contract, lines);
        expect(comparable(text)).toEqual(comparable(decoded));
        // A share of the lines takes the engine's reader; the others hold the corpus's edge values.
        expect(taken).toBeGreaterThan(contract === scalar ? lines.length / 3 : 100);
        expect(decoded.bad.length).toBeGreaterThan(100);
      });
    }
  }

  it("takes ordinary order events as text", async () => {
    const contract = makeContract({
      fields: [
        { name: "order_id", type: "integer", required: true },
        { name: "amount", type: "double" },
        { name: "email", type: "string" },
        { name: "created_at", type: "timestamp" },
      ],
      unknownFields: "quarantine",
    });
    const lines = Array.from({ length: 500 }, (_, i) =>
      JSON.stringify({ order_id: i, amount: Math.round(i * 137) / 100, email: `u${i}@example.com`, created_at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString() }),
    );
    const { text, decoded, taken } = await both(contract, lines);
    expect(taken).toBe(lines.length);
    expect(comparable(text)).toEqual(comparable(decoded));
  });

  it("declines every line when the contract keeps undeclared keys", async () => {
    expect(await duck.screenJson!(['{"id":1}'], parityContract)).toBeUndefined();
  });
});
