/**
 * The JavaScript pass in slices (what the DuckDB engine runs, pausing between slices so that a
 * lake write in flight can continue) must encode exactly what the pass in one go does — at
 * every slice boundary, including non-object records, unknown keys and aliases.
 */
import { describe, expect, it } from "vitest";
import { numberText } from "../../src/engine/canonical.js";
import { encodeBatch, encodeBatchInSlices, spelledAlikeAsJson } from "../../src/engine/encode.js";
import { compilePlan } from "../../src/engine/plan.js";
import { DuckDBInstance } from "../../src/util/duckdb.js";
import { makeContract } from "../support/contract.js";
import { generateCorpus, parityContract } from "./corpus.js";

describe("encodeBatchInSlices", () => {
  const corpus = generateCorpus(500, 7);
  const quarantineContract = makeContract({ ...parityContract, fields: parityContract.fields, unknownFields: "quarantine" });

  for (const [name, contract] of [
    ["unknown_fields: allow (marks extra keys)", parityContract],
    ["unknown_fields: quarantine (lists unknown keys)", quarantineContract],
  ] as const) {
    it(`matches the one-go pass for every slice size — ${name}`, async () => {
      const plan = compilePlan(contract, { allStringText: true });
      const whole = encodeBatch(corpus, plan);
      // The corpus has records that are not objects: slices must carry the engine row count on.
      expect(whole.notObject.length).toBeGreaterThan(0);
      expect(whole.n).toBe(corpus.length - whole.notObject.length);
      // …and records with keys beyond the contract's: the per-policy outputs are filled in.
      if (contract.schemaPolicy.unknownFields === "allow") expect(whole.extra?.includes(1)).toBe(true);
      else expect(whole.unknown.some((u) => u !== null)).toBe(true);
      for (const slice of [1, 3, 64, 499, 500, 501, 0]) {
        let pauses = 0;
        const sliced = await encodeBatchInSlices(corpus, plan, slice, async () => {
          pauses++;
        });
        expect(sliced, `slice ${slice}`).toEqual(whole);
        // A slice size below 1 is taken as 1.
        expect(pauses, `slice ${slice}`).toBe(Math.ceil(corpus.length / Math.max(1, slice)) - 1);
      }
    });
  }

  it("encodes an empty batch without pausing", async () => {
    const plan = compilePlan(parityContract, { allStringText: true });
    let pauses = 0;
    const enc = await encodeBatchInSlices([], plan, 16, async () => {
      pauses++;
    });
    expect(enc).toEqual(encodeBatch([], plan));
    expect(enc.n).toBe(0);
    expect(pauses).toBe(0);
  });
});

describe("numbers sent as JSON numbers (the DuckDB engine's numbersAsJson)", () => {
  it("come back from DuckDB's from_json as the text numberText spells, over random values of every magnitude", async () => {
    // Seeded, so a failure repeats.
    let seed = 12345;
    const random = (): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const values: number[] = [1e-4, -1e-4, 0.1 + 0.2, 1 / 3, 999_999_999_999_999.9, 2 ** 53 - 1, -(2 ** 53 - 1), 0, 4.35, 1.0000000000000002];
    for (let i = 0; i < 60_000; i++) {
      const magnitude = 10 ** (-6 + random() * 24) * (random() < 0.5 ? -1 : 1);
      const shape = random();
      values.push(shape < 0.3 ? Math.round(magnitude * 100) / 100 : shape < 0.5 ? Math.round(magnitude) : shape < 0.7 ? Number(magnitude.toPrecision(1 + Math.floor(random() * 17))) : magnitude);
    }
    const sent = values.filter(spelledAlikeAsJson);
    expect(sent.length).toBeGreaterThan(30_000);
    // …and the range's edges stay out, where the spellings part (exponents, -0, beyond 2^53).
    for (const v of [1e15 + 0.5, 9.9e-5, 1e-7, -0, 2 ** 53 + 2, 1e21, Number.NaN, Number.POSITIVE_INFINITY]) expect(spelledAlikeAsJson(v), String(v)).toBe(false);
    const instance = await DuckDBInstance.create(":memory:");
    const conn = await instance.connect();
    const read = await conn.runAndReadAll(`SELECT unnest(j.c) FROM (SELECT from_json($1::VARCHAR, '{"c":["VARCHAR"]}') AS j)`, [JSON.stringify({ c: sent })]);
    const texts = read.getRows().map((r) => r[0]);
    const differ = sent.filter((v, i) => texts[i] !== numberText(v));
    expect(differ).toEqual([]);
    conn.closeSync();
  });

  it("are given only to numeric fields, with the tags the text would have had", () => {
    const contract = makeContract({
      fields: [
        { name: "i", type: "integer" },
        { name: "d", type: "double" },
        { name: "m", type: "decimal", precision: 12, scale: 2 },
        { name: "s", type: "string" },
      ],
    });
    const records = [
      { i: 7, d: 2.5, m: 448.29, s: 3.5 },
      { i: -0, d: 1e-7, m: 1e16 + 0.5, s: 1 },
      { i: "8", d: "2.5", m: 2 ** 60, s: "x" },
      { i: 1.5, d: Number.NaN, m: null, s: 2.5 },
    ];
    const withNumbers = encodeBatch(records, compilePlan(contract, { allStringText: true, numbersAsJson: true }));
    const textOnly = encodeBatch(records, compilePlan(contract, { allStringText: true }));
    expect(withNumbers.tags).toEqual(textOnly.tags);
    expect(withNumbers.columns).toEqual([
      [7, "-0", "8", 1.5],
      [2.5, "0.0000001", "2.5", null],
      [448.29, "10000000000000000", numberText(2 ** 60), null],
      ["3.5", "1", "x", "2.5"],
    ]);
    // Without the option every value is text.
    expect(textOnly.columns.flat().every((v) => v === null || typeof v === "string")).toBe(true);
  });
});
