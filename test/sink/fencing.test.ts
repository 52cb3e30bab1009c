import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { orderEvents } from "../../examples/orders.js";
import { CheckpointConflictError } from "../../src/checkpoint/errors.js";
import { loadContract } from "../../src/contract/index.js";
import { LakeBusyError, readTable } from "../../src/lake/index.js";
import { StreamRunError, StreamSink } from "../../src/sink/index.js";
import { IterableSource } from "../../src/sources/index.js";

/**
 * I3 for writers in one process: two StreamSinks on one checkpoint key (each with its own store
 * object over the same checkpoint file) race for the same append table. The loser must fail its
 * compare-and-set before it writes a row — an append target cannot undo rows that landed.
 */
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function appendContract(dir: string, format: "duckdb" | "parquet"): string {
  const yaml = readFileSync(fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url)), "utf8")
    .replace("strategy: merge", "strategy: append")
    .replace("format: duckdb", `format: ${format}`);
  const path = join(dir, "orders-append.yaml");
  writeFileSync(path, yaml);
  return path;
}

describe("two writers on one checkpoint key in one process", () => {
  it.each([
    ["duckdb", "sqlite"],
    ["duckdb", "target"],
    ["parquet", "sqlite"],
  ] as const)("the loser writes nothing (%s append target, %s checkpoint)", async (format, kind) => {
    const dir = mkdtempSync(join(tmpdir(), "ll-fence-"));
    dirs.push(dir);
    const contract = appendContract(dir, format);
    const lake = join(dir, "lake");
    const checkpoint = kind === "sqlite" ? join(dir, "checkpoints.sqlite") : "target";
    const RECORDS = 20_000;
    const sink = () =>
      new StreamSink(contract, new IterableSource(() => orderEvents(RECORDS), { replayable: true }), {
        targetPath: lake,
        checkpoint,
        checkpointKey: "orders",
        batchSize: 500,
      });
    const results = await Promise.allSettled([sink().run("available_now"), sink().run("available_now")]);
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]!.reason).toBeInstanceOf(StreamRunError);
    // Refused by the key's compare-and-set, or earlier by the lake's one-writer-per-dataset lock.
    const cause = (lost[0]!.reason as StreamRunError).cause;
    expect(cause instanceof CheckpointConflictError || cause instanceof LakeBusyError, String(cause)).toBe(true);
    expect((lost[0]!.reason as StreamRunError).summary.batches).toBe(0);
    const rows = await readTable(await loadContract(contract), { targetPath: lake });
    const summary = (won[0] as PromiseFulfilledResult<{ goodCount: number }>).value;
    expect(rows).toHaveLength(summary.goodCount);
  });
});
