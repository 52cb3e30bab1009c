/**
 * `--mode processing_time --interval TIME` for `lakelogic run` and `start`, and the contract's
 * `trigger: processing_time` (with its `processing_time` interval) as their default; schedules
 * stay available_now drains.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { streamInputOf } from "../../src/cli/temporal-flags.js";
import { UsageError } from "../../src/cli/types.js";
import { loadContract } from "../../src/contract/index.js";

const tmp = mkdtempSync(join(tmpdir(), "ll-ptime-flags-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function contractFile(trigger: string): string {
  const file = join(tmp, `c-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(
    file,
    `dataset: orders\nmodel: {fields: [{name: order_id, type: long}]}\nmaterialization: {strategy: append, format: duckdb}\nsource: {type: file, path: x.ndjson}\n${trigger}`,
  );
  return file;
}

describe("processing_time on the command line", () => {
  it("takes --mode processing_time with --interval in either spelling", async () => {
    const file = contractFile("");
    const contract = await loadContract(file);
    for (const interval of ["30s", "30 seconds"]) {
      const input = streamInputOf(file, { mode: "processing_time", interval }, contract, { fallback: "continuous", fromContract: true });
      expect(input).toMatchObject({ mode: "processing_time", intervalMs: 30_000 });
    }
  });

  it("runs the contract's processing_time trigger at its interval by default; --interval overrides it", async () => {
    const file = contractFile('trigger: processing_time\nprocessing_time: "2 minutes"\n');
    const contract = await loadContract(file);
    const input = streamInputOf(file, {}, contract, { fallback: "continuous", fromContract: true });
    expect(input).toMatchObject({ mode: "processing_time", intervalMs: 120_000 });
    expect(input.maxWaitMs).toBeUndefined(); // the interval is the trigger's, not a batch's wait
    expect(streamInputOf(file, { interval: "5s" }, contract, { fallback: "continuous", fromContract: true }).intervalMs).toBe(5000);
    expect(streamInputOf(file, { mode: "continuous" }, contract, { fallback: "continuous", fromContract: true }).intervalMs).toBeUndefined();
  });

  it("refuses --interval without processing_time (schedules drain), and an interval that is not one", async () => {
    const file = contractFile('trigger: processing_time\nprocessing_time: "2 minutes"\n');
    const contract = await loadContract(file);
    // As `lakelogic schedule create` asks: available_now whatever the contract says.
    const scheduled = streamInputOf(file, {}, contract, { fallback: "available_now", fromContract: false });
    expect(scheduled.mode).toBe("available_now");
    expect(scheduled.intervalMs).toBeUndefined();
    expect(() => streamInputOf(file, { interval: "30s" }, contract, { fallback: "available_now", fromContract: false })).toThrow(
      /--interval goes with --mode processing_time \(the mode is available_now\)/,
    );
    const soon = () => streamInputOf(file, { mode: "processing_time", interval: "soon" }, contract, { fallback: "continuous", fromContract: true });
    expect(soon).toThrow(UsageError);
    expect(soon).toThrow(/--interval: expected an interval such as 30s/);
  });
});
