/**
 * The JavaScript pass in slices (what the DuckDB engine runs, pausing between slices so that a
 * lake write in flight can continue) must encode exactly what the pass in one go does — at
 * every slice boundary, including non-object records, unknown keys and aliases.
 */
import { describe, expect, it } from "vitest";
import { encodeBatch, encodeBatchInSlices } from "../../src/engine/encode.js";
import { compilePlan } from "../../src/engine/plan.js";
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
