/** Bronze and silver contracts over a temporary lake, for the lake source's tests and its crash child. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { StreamSink } from "../../src/sink/index.js";
import type { StreamRunSummary } from "../../src/sink/types.js";
import { IterableSource } from "../../src/sources/index.js";

export type LakeFormat = "duckdb" | "parquet" | "delta";

const FIELDS = `model:
  fields:
    - {name: order_id, type: string, required: true}
    - {name: amount, type: double}
    - {name: status, type: string}
primary_key: [order_id]
`;

/** Bronze: merge on order_id; a negative amount is quarantined. */
export function bronzeContract(dir: string, format: LakeFormat): string {
  const file = join(dir, `bronze-${format}.yaml`);
  writeFileSync(
    file,
    `dataset: bronze_orders
${FIELDS}quality:
  row_rules:
    - range: {field: amount, min: 0}
materialization: {strategy: merge, format: ${format}, target_path: ${JSON.stringify(join(dir, "bronze"))}}
`,
  );
  return file;
}

/** Silver: reads bronze through the lake source; a status other than placed/paid is quarantined. */
export function silverContract(dir: string, format: LakeFormat): string {
  const file = join(dir, `silver-${format}.yaml`);
  writeFileSync(
    file,
    `dataset: silver_orders
${FIELDS}quality:
  row_rules:
    - accepted_values: {field: status, values: [placed, paid]}
materialization: {strategy: merge, format: duckdb, target_path: ${JSON.stringify(join(dir, "silver"))}}
source: {type: lake, path: ${JSON.stringify(join(dir, "bronze"))}, table: bronze_orders, chunk_size: 16}
`,
  );
  return file;
}

export interface Order {
  order_id: string;
  amount: number;
  status: string;
}

/** Orders `from` ≤ i < `to`: every 10th has a negative amount (bronze bad), every 7th status "lost" (silver bad). */
export function orders(from: number, to: number, version = 1): Order[] {
  const out: Order[] = [];
  for (let i = from; i < to; i++) {
    out.push({ order_id: `o${i}`, amount: i % 10 === 3 ? -1 : i * version, status: i % 7 === 2 ? "lost" : i % 2 ? "paid" : "placed" });
  }
  return out;
}

/** One available_now bronze run writing `rows` (its own checkpoint key, so each call is a new stream). */
export async function writeBronze(dir: string, format: LakeFormat, key: string, rows: Order[], batchSize = 25): Promise<StreamRunSummary> {
  const source = new IterableSource(() => rows, { replayable: true, description: key });
  const sink = new StreamSink(bronzeContract(dir, format), source, {
    checkpoint: join(dir, "bronze-checkpoints.sqlite"),
    checkpointKey: key,
    batchSize,
    maxWaitMs: 60_000,
  });
  return sink.run("available_now");
}
