import { describe, expect, it } from "vitest";
import { ContractError, parseContract } from "../../src/contract/index.js";
import { parseProcessingTime } from "../../src/contract/normalise/trigger.js";

const stream = (options: string) => `dataset: rides\nsource:\n  type: stream\n  options:\n${options}`;

describe("the trigger of a Python `type: stream` source (source.options)", () => {
  it("reads source.options.trigger", () => {
    expect(parseContract(stream("    kind: kafka\n    trigger: available_now\n")).trigger).toBe("available_now");
    expect(parseContract(stream("    kind: kafka\n    trigger: Continuous\n")).trigger).toBe("continuous");
  });

  it("lets a trigger written higher up win", () => {
    expect(parseContract(`trigger: continuous\n${stream("    trigger: available_now\n")}`).trigger).toBe("continuous");
  });

  it("checks processing_time beside the trigger, naming the key", () => {
    expect(parseContract(stream("    trigger: continuous\n    processing_time: 30 seconds\n")).trigger).toBe("continuous");
    let err: unknown;
    try {
      parseContract(stream("    trigger: continuous\n    processing_time: soon\n"), "c.yaml");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ContractError);
    expect((err as Error).message).toMatch(/source\.options\.processing_time/);
    expect((err as Error).message).toMatch(/30 seconds/);
  });
});

describe("parseProcessingTime", () => {
  it("reads the Python spelling and the short one", () => {
    expect(parseProcessingTime("30 seconds")).toBe(30_000);
    expect(parseProcessingTime("30s")).toBe(30_000);
    expect(parseProcessingTime("1 minute")).toBe(60_000);
    expect(parseProcessingTime("5 min")).toBe(300_000);
    expect(parseProcessingTime("2h")).toBe(7_200_000);
    expect(parseProcessingTime("500 ms")).toBe(500);
    expect(parseProcessingTime("1.5 seconds")).toBe(1_500);
  });

  it("refuses what is not a positive duration with a unit", () => {
    for (const bad of ["30", "soon", "0 seconds", "-1s", "", "30 parsecs"]) expect([bad, parseProcessingTime(bad)]).toEqual([bad, undefined]);
  });
});
