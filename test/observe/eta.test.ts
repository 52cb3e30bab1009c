import { describe, expect, it } from "vitest";
import { eta } from "../../src/cli/run-output.js";

describe("the progress line's ETA", () => {
  it("extrapolates the time left from the fraction done, and says nothing without a known end", () => {
    expect(eta(0.25, 30_000)).toBe(" ETA 1m 30s");
    expect(eta(0.5, 4_000)).toBe(" ETA 4s");
    expect(eta(0.1, 3_600_000)).toBe(" ETA 9h 00m");
    expect(eta(0, 1_000)).toBe("");
    expect(eta(1, 1_000)).toBe("");
    expect(eta(Number.NaN, 1_000)).toBe("");
  });
});
