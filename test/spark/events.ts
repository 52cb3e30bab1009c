/** Order events for the Spark stream tests: the example contract's shape, some bad, keys repeating. */
import { readFileSync } from "node:fs";
import { parseContract } from "../../src/contract/index.js";
import type { Contract } from "../../src/contract/types.js";

/** examples/orders.yaml as a Spark user would write it: the same contract, Delta as the format. */
export function sparkOrdersContract(): Contract {
  const text = readFileSync("examples/orders.yaml", "utf8").replace("format: duckdb", "format: delta");
  return parseContract(text);
}

/** A bronze contract over the same fields: every record that is JSON kept, appended to Delta under `lake`. */
export function bronzeOrdersYaml(lake: string): string {
  return `dataset: bronze_orders
model:
  fields:
    - { name: order_id, type: long }
    - { name: customer_id, type: string }
    - { name: amount, type: double }
    - { name: currency, type: string }
    - { name: status, type: string }
    - { name: email, type: string }
    - { name: quantity, type: integer }
    - { name: created_at, type: timestamp }
materialization:
  strategy: append
  format: delta
  target_path: ${lake}
`;
}

/**
 * `n` Kafka values: every 5th is bad (a status outside the list, a negative amount, not JSON, a
 * missing customer), and order ids repeat (ids 0..n/2), so the merge keeps one row per key.
 */
export function orderEvents(n: number, seed: number): { values: string[]; distinctGoodKeys: number } {
  const values: string[] = [];
  const goodKeys = new Set<number>();
  for (let i = 0; i < n; i++) {
    const id = (i * 7 + seed) % Math.ceil(n / 2);
    const ok = {
      order_id: id,
      customer_id: `c${i % 13}`,
      amount: 10 + i,
      currency: "EUR",
      status: "placed",
      email: `u${i}@example.com`,
      quantity: 1 + (i % 5),
      created_at: new Date(Date.UTC(2024, 0, 1, 0, 0, i)).toISOString(),
    };
    if (i % 5 !== 4) {
      goodKeys.add(id);
      values.push(JSON.stringify(ok));
      continue;
    }
    const kind = (i / 5) % 4 | 0;
    if (kind === 0) values.push(JSON.stringify({ ...ok, status: "lost" }));
    else if (kind === 1) values.push(JSON.stringify({ ...ok, amount: -1 }));
    else if (kind === 2) values.push(`{"order_id": ${id}, not json`);
    else values.push(JSON.stringify({ ...ok, customer_id: undefined }));
  }
  return { values, distinctGoodKeys: goodKeys.size };
}
