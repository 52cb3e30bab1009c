/**
 * DuckDB and Polars must split a batch identically and produce identical good rows,
 * errors, counts and dataset results — checked on a seeded corpus of edge cases — and
 * the good values must equal the JavaScript definition of coercion (canonical.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { showValue } from "../../src/engine/assemble.js";
import { coerceValue } from "../../src/engine/canonical.js";
import { createEngine } from "../../src/engine/index.js";
import type { Engine, ValidationResult } from "../../src/engine/types.js";
import { EDGE_VALUES, generateCorpus, parityContract } from "./corpus.js";
import { makeContract } from "../support/contract.js";

let duck: Engine;
let polars: Engine;
beforeAll(async () => {
  duck = await createEngine("duckdb");
  polars = await createEngine("polars");
});
afterAll(async () => {
  await duck.close();
  await polars.close();
});

function summary(r: ValidationResult): unknown {
  return { good: r.good.length, bad: r.bad.length };
}

describe("engine parity", () => {
  for (const seed of [1, 2, 3]) {
    it(`gives the same result on a 3000-record corpus (seed ${seed})`, async () => {
      const records = generateCorpus(3000, seed);
      const [a, b] = await Promise.all([duck.validate(records, parityContract), polars.validate(records, parityContract)]);
      expect(summary(b)).toEqual(summary(a));
      expect(b.bad.map((x) => x.index)).toEqual(a.bad.map((x) => x.index));
      expect(b.bad).toEqual(a.bad);
      expect(b.good).toEqual(a.good);
      expect(b.ruleCounts).toEqual(a.ruleCounts);
      expect(b.datasetRules).toEqual(a.datasetRules);
      // The corpus must actually exercise both outcomes and many failure kinds.
      expect(a.good.length).toBeGreaterThan(100);
      expect(a.bad.length).toBeGreaterThan(100);
      expect(new Set(a.bad.flatMap((x) => x.errors.map((e) => e.ruleId.split(":")[0]))).size).toBeGreaterThan(5);
    });
  }

  it("matches the JavaScript definition of every type on every edge value", async () => {
    const fields = parityContract.fields;
    // One record per (field, edge value): a failure can only be that field's.
    const cases = fields.flatMap((f) => EDGE_VALUES.map((v) => ({ f, v })));
    const records = cases.map(({ f, v }) => ({ [f.name]: v }));
    const contract = makeContract({ fields });
    for (const engine of [duck, polars]) {
      const res = await engine.validate(records, contract);
      const bad = new Set(res.bad.map((b) => b.index));
      let g = 0;
      cases.forEach(({ f, v }, i) => {
        const expected = coerceValue(v, f);
        const where = `${engine.name}: ${f.name} <- ${showValue(v)}`;
        expect(bad.has(i), where).toBe(!expected.ok);
        if (!bad.has(i)) expect(res.good[g++]![f.name], where).toEqual(expected.ok ? expected.value : undefined);
      });
      expect(g).toBe(res.good.length);
    }
  });
});
