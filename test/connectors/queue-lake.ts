/**
 * Shared by the queue connector tests: read a lake written from order events and say exactly
 * which orders are in the target and which messages are in quarantine.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { isBadOrder } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";

export const ordersContract = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));

export interface LakeCounts {
  /** order_id of every row in the merge target (with repeats, if any). */
  goodIds: number[];
  /** Quarantined order events (contract failures): their order_id. */
  badIds: number[];
  /** Quarantined poison messages (decode failures): raw payload and position. */
  poison: Array<{ raw: string | null; position: unknown; reasons: string[] }>;
}

export async function readLake(lakeDir: string): Promise<LakeCounts> {
  const contract = await loadContract(ordersContract);
  const good = await readTable(contract, { targetPath: lakeDir });
  const bad = await readQuarantine(contract, { targetPath: lakeDir });
  const badIds: number[] = [];
  const poison: LakeCounts["poison"] = [];
  for (const q of bad) {
    if (q.ruleIds.includes("decode")) poison.push({ raw: q.raw, position: q.position, reasons: q.reasons });
    else badIds.push(Number((q.record as { order_id: unknown }).order_id));
  }
  return { goodIds: good.map((r) => Number(r.order_id)), badIds, poison };
}

/** Orders [0, n) split into those the contract accepts and those it quarantines. */
export function expectedOrders(n: number, from = 0): { good: number[]; bad: number[] } {
  const good: number[] = [];
  const bad: number[] = [];
  for (let i = from; i < from + n; i++) (isBadOrder(i) ? bad : good).push(i);
  return { good, bad };
}

export const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);

export function tempDirs(prefix: string): { make(name: string): string; cleanup(): void } {
  const dirs: string[] = [];
  return {
    make(name) {
      const d = mkdtempSync(join(tmpdir(), `${prefix}-${name}-`));
      dirs.push(d);
      return d;
    },
    cleanup() {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}
