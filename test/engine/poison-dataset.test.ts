/**
 * A dataset rule whose evaluation throws inside the engine is reported as that rule failing,
 * with the engine's message; the batch's rows are still validated and written.
 *
 * No data makes the built-in dataset rules throw, so their measure is replaced here, for the
 * rule named `poison_measure` only, by one the engine itself fails to compute: in DuckDB an
 * aggregate cast out of range once the batch has more than ten good rows, in Polars a column
 * that is not there.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { parseContract } from "../../src/contract/index.js";
import type * as Measure from "../../src/engine/dataset-measure.js";
import { createEngine } from "../../src/engine/index.js";
import type { EngineName } from "../../src/engine/types.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamSink, type BatchReport } from "../../src/sink/index.js";
import { makeContract } from "../support/contract.js";

vi.mock("../../src/engine/dataset-measure.js", async (importOriginal) => {
  const real = await importOriginal<typeof Measure>();
  return {
    ...real,
    duckdbMeasure: (d: Parameters<typeof real.duckdbMeasure>[0]) =>
      d.rule.id === "poison_measure" ? "CAST(10 - count(*) FILTER (WHERE NOT __ll_bad) AS UTINYINT)" : real.duckdbMeasure(d),
    polarsMeasure: (...args: Parameters<typeof real.polarsMeasure>) => {
      const [pl, good, d] = args;
      return d.rule.id === "poison_measure" ? good.select(pl.col("__ll_not_a_column")).height : real.polarsMeasure(...args);
    },
  };
});

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const records = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ id: from + i, name: i === 3 ? null : `n${i}` }));

describe.each<EngineName>(["duckdb", "polars"])("a dataset rule that throws on %s", (engineName) => {
  it("is reported failing with the engine's message; the rows and the other dataset rules are as usual", async () => {
    const engine = await createEngine(engineName);
    try {
      const contract = makeContract({
        fields: [
          { name: "id", type: "integer" },
          { name: "name", type: "string" },
        ],
        rowRules: [{ kind: "sql", id: "id_small", sql: "id < 15" }],
        datasetRules: [
          { kind: "unique", fields: ["id"], id: "poison_measure", severity: "warning" },
          { kind: "null_ratio", field: "name", max: 0.01 },
          { kind: "unique", fields: ["name"] },
        ],
      });
      const res = await engine.validate(records(20), contract);
      expect(res.goodCount).toBe(15);
      expect(res.good.map((r) => r["id"])).toEqual(Array.from({ length: 15 }, (_, i) => i));
      expect(res.bad.map((b) => b.index)).toEqual([15, 16, 17, 18, 19]);
      const [poison, nulls, unique] = res.datasetRules;
      expect(poison).toMatchObject({ ruleId: "poison_measure", kind: "unique", severity: "warning", passed: false });
      expect(poison!.message).toMatch(/^poison_measure: cannot be evaluated: ./);
      expect(poison!.error).toBeTruthy();
      expect(nulls).toMatchObject({ ruleId: "null_ratio:name", passed: false, observed: 1 / 15 });
      expect(unique).toMatchObject({ ruleId: "unique:name", passed: true, observed: 0 });
    } finally {
      await engine.close();
    }
  });

  it("is reported failing when a row rule throws in the same batch too", async () => {
    const engine = await createEngine(engineName);
    try {
      const contract = makeContract({
        fields: [
          { name: "id", type: "integer" },
          { name: "name", type: "string" },
        ],
        rowRules: [{ kind: "sql", id: "name_numbered", sql: "name IS NULL OR CAST(substr(name, 2) AS INTEGER) >= 0" }],
        datasetRules: [{ kind: "unique", fields: ["id"], id: "poison_measure" }],
      });
      const batch = records(20).map((r, i) => (i === 7 ? { ...r, name: "nX" } : r));
      const res = await engine.validate(batch, contract);
      expect(res.bad.map((b) => [b.index, b.errors.map((e) => e.ruleId)])).toEqual([[7, ["name_numbered"]]]);
      expect(res.bad[0]!.errors[0]!.message).toMatch(/^name_numbered: cannot be evaluated: /);
      expect(res.goodCount).toBe(19);
      expect(res.datasetRules).toEqual([expect.objectContaining({ ruleId: "poison_measure", passed: false, error: expect.any(String) })]);
    } finally {
      await engine.close();
    }
  });

  it("does not stop a stream: the batch is written and the report names the failing rule", async () => {
    const target = mkdtempSync(join(tmpdir(), "ll-poison-ds-"));
    dirs.push(target);
    const contract = parseContract(`
dataset: poison_ds
model:
  fields:
    - { name: id, type: integer }
    - { name: name, type: string }
quality:
  dataset_rules:
    - name: poison_measure
      unique: id
materialization:
  strategy: append
  format: duckdb
`);
    const reports: BatchReport[] = [];
    const summary = await new StreamSink(contract, [...records(30), { id: "x" }], {
      engine: engineName,
      targetPath: target,
      checkpoint: "memory",
      batchSize: 20,
      onBatch: (b) => void reports.push(b),
    }).run("available_now");
    expect(summary).toMatchObject({ batches: 2, sourceCount: 31, goodCount: 30, badCount: 1, stoppedBy: "end" });
    // The first batch (20 good rows) makes the measure throw.
    expect(reports[0]!.datasetRules).toEqual([
      expect.objectContaining({ ruleId: "poison_measure", passed: false, message: expect.stringMatching(/cannot be evaluated/) }),
    ]);
    // DuckDB's replaced measure throws only above ten good rows: the second batch is measured.
    if (engineName === "duckdb") expect(reports[1]!.datasetRules[0]!.error).toBeUndefined();
    expect((await readTable(contract, { targetPath: target })).length).toBe(30);
    expect((await readQuarantine(contract, { targetPath: target })).length).toBe(1);
  });
});
