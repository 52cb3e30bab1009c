/**
 * Coercion to contract types, value by value, on both engines. The table is the
 * documented behaviour (docs/validation.md "Coercion"); ERR means a `type:<field>` failure.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FieldSpec, FieldType } from "../../src/contract/types.js";
import { showValue } from "../../src/engine/assemble.js";
import { createEngine } from "../../src/engine/index.js";
import type { Engine, EngineName } from "../../src/engine/types.js";
import { makeContract } from "../support/contract.js";

const ERR = Symbol("type error");
type Case = [input: unknown, expected: unknown];

const TABLE: Array<{ type: FieldType; spec?: Partial<FieldSpec>; cases: Case[] }> = [
  {
    type: "string",
    cases: [
      ["x", "x"],
      ["", ""],
      ["  padded  ", "  padded  "],
      ["e\u0301 🎉 שלום", "e\u0301 🎉 שלום"],
      ["nul\u0000", "nul\u0000"],
      [42, "42"],
      [1.5, "1.5"],
      [1e21, "1000000000000000000000"],
      [true, "true"],
      [12345678901234567890n, "12345678901234567890"],
      [new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6)), "2024-01-02T03:04:05.006Z"],
      [{ a: 1 }, ERR],
      [[1], ERR],
      ["\ud800", ERR],
      [NaN, ERR],
      [null, null],
      [undefined, null],
    ],
  },
  {
    type: "integer",
    cases: [
      [42, 42],
      [-0, 0],
      [4.0, 4],
      ["42", 42],
      [" 42 ", 42],
      ["\t-7\n", -7],
      ["+42", 42],
      ["007", 7],
      [2 ** 53 - 1, 2 ** 53 - 1],
      [2 ** 53, 9007199254740992n],
      [9007199254740993n, 9007199254740993n],
      ["9223372036854775807", 9223372036854775807n],
      ["-9223372036854775808", -9223372036854775808n],
      ["9223372036854775808", ERR],
      [1e20, ERR],
      [4.5, ERR],
      ["4.5", ERR],
      ["4.0", ERR],
      ["1e3", ERR],
      ["", ERR],
      ["abc", ERR],
      ["٣", ERR],
      [true, ERR],
      [null, null],
    ],
  },
  {
    type: "double",
    cases: [
      [1.5, 1.5],
      [0.1, 0.1],
      [-0, -0],
      ["-0", -0],
      [" 2.5e3 ", 2500],
      ["1E5", 100000],
      ["1e308", 1e308],
      [5e-324, 5e-324],
      ["1e-400", 0],
      [2n ** 70n, 1180591620717411303424],
      ["1e309", ERR],
      ["NaN", ERR],
      ["Infinity", ERR],
      [NaN, ERR],
      [Infinity, ERR],
      [".5", ERR],
      ["5.", ERR],
      ["0x10", ERR],
      [true, ERR],
      [null, null],
    ],
  },
  {
    type: "decimal",
    spec: { precision: 6, scale: 2 },
    cases: [
      ["12.5", "12.50"],
      [12.345, "12.35"],
      ["12.345", "12.35"],
      ["-12.345", "-12.35"],
      ["0.005", "0.01"],
      ["-0.005", "-0.01"],
      ["-0.001", "0.00"],
      [" 7 ", "7.00"],
      ["0007.1", "7.10"],
      [1e-7, "0.00"],
      [9999.99, "9999.99"],
      ["9999.995", ERR],
      ["10000", ERR],
      ["1e3", ERR],
      ["12,50", ERR],
      [true, ERR],
      [null, null],
    ],
  },
  {
    type: "decimal",
    spec: { precision: 5, scale: 0 },
    cases: [
      ["12.5", "13"],
      ["-12.5", "-13"],
      ["12.49", "12"],
      [99999, "99999"],
      ["99999.5", ERR],
    ],
  },
  {
    type: "boolean",
    cases: [
      [true, true],
      [false, false],
      ["true", true],
      ["FALSE", false],
      [" True ", true],
      ["1", true],
      ["0", false],
      [1, true],
      [0, false],
      ["yes", ERR],
      ["t", ERR],
      [2, ERR],
      [null, null],
    ],
  },
  {
    type: "date",
    cases: [
      ["2024-02-29", "2024-02-29"],
      [" 2024-03-01 ", "2024-03-01"],
      ["0001-01-01", "0001-01-01"],
      ["9999-12-31", "9999-12-31"],
      ["2023-02-29", ERR],
      ["2024-04-31", ERR],
      ["2024-13-01", ERR],
      ["0000-01-01", ERR],
      ["2024-1-1", ERR],
      ["2024-01-01T00:00:00Z", ERR],
      [20240101, ERR],
      [new Date(0), ERR],
      [null, null],
    ],
  },
  {
    type: "timestamp",
    cases: [
      ["2024-01-01T10:00:00Z", "2024-01-01T10:00:00.000000Z"],
      ["2024-01-01T10:00:00.123456789Z", "2024-01-01T10:00:00.123456Z"],
      ["2024-01-01T10:00:00+05:30", "2024-01-01T04:30:00.000000Z"],
      ["2024-01-01T10:00:00-0800", "2024-01-01T18:00:00.000000Z"],
      ["2024-01-01T10:00+01", "2024-01-01T09:00:00.000000Z"],
      ["2024-01-01T10:00Z", "2024-01-01T10:00:00.000000Z"],
      ["2024-01-01 10:00", "2024-01-01T10:00:00.000000Z"],
      ["2024-01-01", "2024-01-01T00:00:00.000000Z"],
      [" 2024-06-01T00:00:00Z\n", "2024-06-01T00:00:00.000000Z"],
      // The Date#toISOString form is read in JavaScript (encodeTimestamp); its edges:
      ["2024-02-29T23:59:59.999Z", "2024-02-29T23:59:59.999000Z"],
      ["2024-06-01T12:30:15.123456Z", "2024-06-01T12:30:15.123456Z"],
      ["1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999000Z"],
      ["1500-01-01T00:00:00.000Z", "1500-01-01T00:00:00.000000Z"],
      ["2023-02-29T12:00:00.000Z", ERR],
      ["2024-04-31T00:00:00.000Z", ERR],
      ["2024-01-01T24:00:00.000Z", ERR],
      ["2024-01-01T10:00:60.000Z", ERR],
      ["2024-01-01T10:00:00.000z", ERR],
      [1704103200000n, ERR],
      [1704103200000.5, ERR],
      [new Date(-1), "1969-12-31T23:59:59.999000Z"],
      [new Date(Date.UTC(2024, 5, 1, 12, 30, 15, 250)), "2024-06-01T12:30:15.250000Z"],
      ["9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z"],
      ["0001-01-01T00:30:00+01:00", ERR],
      ["2024-01-01T24:00:00Z", ERR],
      ["2024-01-01T10:00:60Z", ERR],
      ["2023-02-29T12:00:00Z", ERR],
      ["2024-01-01t10:00:00z", ERR],
      ["2024-01-01T10:00:00+24:00", ERR],
      [1704103200000, ERR],
      [new Date(Number.NaN), ERR],
      [null, null],
    ],
  },
  {
    type: "json",
    cases: [
      [{ a: 1, b: [1, "x", null] }, { a: 1, b: [1, "x", null] }],
      [[], []],
      ["text", "text"],
      [5, 5],
      [false, false],
      [{ u: undefined, n: 1 }, { n: 1 }],
      [null, null],
      [NaN, ERR],
      // bigint is a JSON number with every digit; read back as a number where that is exact.
      [{ b: 1n, big: 12345678901234567890n }, { b: 1, big: 12345678901234567890n }],
    ],
  },
];

describe.each<EngineName>(["duckdb", "polars"])("coercion on %s", (engineName) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await createEngine(engineName);
  });
  afterAll(async () => {
    await engine.close();
  });

  for (const { type, spec, cases } of TABLE) {
    const label = spec?.precision !== undefined ? `${type}(${spec.precision},${spec.scale})` : type;
    it(`converts values to ${label}`, async () => {
      const contract = makeContract({ fields: [{ name: "v", type, ...spec }] });
      const res = await engine.validate(
        cases.map(([input]) => ({ v: input })),
        contract,
      );
      const bad = new Map(res.bad.map((b) => [b.index, b]));
      let g = 0;
      cases.forEach(([input, expected], i) => {
        const where = `${label} <- ${showValue(input)}`;
        if (expected === ERR) {
          expect(bad.get(i)?.errors, where).toEqual([
            { ruleId: "type:v", message: expect.stringMatching(/^v: cannot convert .* to /) as unknown },
          ]);
        } else {
          expect(bad.has(i), where).toBe(false);
          expect(res.good[g++], where).toEqual({ v: expected });
        }
      });
    });
  }

  it("says which value could not be converted, and to what", async () => {
    const contract = makeContract({
      fields: [
        { name: "order_id", type: "integer" },
        { name: "amount", type: "decimal", precision: 12, scale: 2 },
      ],
    });
    const res = await engine.validate([{ order_id: "abc", amount: "12,50" }], contract);
    expect(res.bad[0]!.errors).toEqual([
      { ruleId: "type:order_id", message: 'order_id: cannot convert "abc" to integer' },
      { ruleId: "type:amount", message: 'amount: cannot convert "12,50" to decimal(12,2)' },
    ]);
  });

  it("reads a missing field as null and fills a field from its alias", async () => {
    const contract = makeContract({
      fields: [
        { name: "id", type: "integer", aliases: ["ID", "orderId"] },
        { name: "note", type: "string" },
      ],
    });
    const res = await engine.validate(
      [{ id: 1, ID: 9 }, { ID: "2" }, { orderId: 3 }, { id: undefined, ID: 4 }, { id: null, ID: 5 }, {}],
      contract,
    );
    expect(res.bad).toEqual([]);
    // The field's own key wins when present, even as null; undefined counts as absent.
    // Alias keys never show in the row.
    expect(res.good).toEqual([
      { id: 1, note: null },
      { id: 2, note: null },
      { id: 3, note: null },
      { id: 4, note: null },
      { id: null, note: null },
      { id: null, note: null },
    ]);
  });
});
