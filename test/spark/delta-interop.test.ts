/**
 * SparkStreamSink reading the Delta bronze StreamSink writes (delta-rs): a merge bronze, so its
 * later versions are merges that rewrite files; Spark streams the table's change feed from
 * version 0 into a silver Delta table (merge on the key). One Spark application; the silver
 * table is read back with delta-rs.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SparkStreamSink } from "../../src/spark/stream-sink.js";
import { readDelta } from "../support/delta.js";
import { requireSpark } from "../support/spark.js";
import { orders, writeBronze } from "../sources/lake-source-support.js";

requireSpark();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ll-spark-interop-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("SparkStreamSink reads StreamSink's Delta bronze", () => {
  it("streams every insert and update of the merge bronze into silver: silver holds bronze's rows", async () => {
    const b1 = await writeBronze(dir, "delta", "bronze-1", orders(0, 60));
    // New orders and new versions of orders 0..14: merges that rewrite the files holding them.
    const b2 = await writeBronze(dir, "delta", "bronze-2", [...orders(60, 80), ...orders(0, 15, 2)]);
    const bronze = readDelta(join(dir, "bronze", "bronze_orders"));
    expect(bronze.history.some((h) => h["operation"] === "MERGE")).toBe(true);

    const contract = join(dir, "silver.yaml");
    await writeFile(
      contract,
      `dataset: silver_orders
model:
  fields:
    - {name: order_id, type: string, required: true}
    - {name: amount, type: double}
    - {name: status, type: string}
primary_key: [order_id]
quality:
  row_rules:
    - accepted_values: {field: status, values: [placed, paid]}
materialization: {strategy: merge, format: delta, target_path: ${JSON.stringify(join(dir, "silver"))}}
`,
    );
    const summary = await new SparkStreamSink(contract, {
      source: { type: "delta", path: join(dir, "bronze", "bronze_orders"), startingVersion: 0 },
      checkpointLocation: join(dir, "silver-checkpoint"),
      master: "local[1]",
    }).run();
    // Every row bronze inserted or updated, once: the change feed, not the rewritten files.
    expect(summary.sourceCount).toBe(b1.goodCount + b2.goodCount);
    expect(summary.goodCount + summary.badCount + summary.supersededCount).toBe(summary.sourceCount);

    const silver = readDelta(join(dir, "silver", "silver_orders")).rows;
    const bronzeRows = bronze.rows.filter((r) => r["status"] !== "lost");
    const key = (r: Record<string, unknown>) => String(r["order_id"]);
    expect(silver.map(key).sort()).toEqual(bronzeRows.map(key).sort());
    const amounts = new Map(bronzeRows.map((r) => [key(r), r["amount"]]));
    for (const r of silver) expect(r["amount"], key(r)).toBe(amounts.get(key(r)));
  }, 400_000);
});
