import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder } from "../../examples/orders.js";
import { SQLiteCheckpointStore } from "../../src/checkpoint/sqlite.js";
import { loadContract } from "../../src/contract/index.js";
import { readQuarantine, readTable } from "../../src/lake/index.js";
import { StreamClient } from "../../src/temporal/client.js";
import type { StreamWorkflowInput, StreamWorkflowResult } from "../../workflows/types.js";
import { delay, stopProcess, waitFor } from "../support/proc.js";
import { seededRandom } from "../support/random.js";
import { requireService } from "../support/services.js";
import { startTemporal } from "../support/temporal.js";
import { ORDERS_CONTRACT, spawnWorker, writeOrders } from "./support.js";

/**
 * Chaos on a real Temporal dev server: workers SIGKILLed again and again mid-stream, and the
 * server itself restarted. Afterwards every row is counted.
 */
const temporal = await requireService("temporal: chaos", () => startTemporal());
afterAll(() => temporal?.stop());

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function setup(name: string, records: number): { dir: string; input: StreamWorkflowInput } {
  const dir = mkdtempSync(join(tmpdir(), `ll-chaos-${name}-`));
  dirs.push(dir);
  const events = join(dir, "events.ndjson");
  writeOrders(events, 0, records);
  return {
    dir,
    input: {
      contract: ORDERS_CONTRACT,
      source: { type: "file", path: events },
      mode: "available_now",
      checkpointKey: `chaos::${name}`,
      targetPath: join(dir, "lake"),
      checkpoint: join(dir, "checkpoints.sqlite"),
      batchSize: 1000,
      maxWaitMs: 500,
      // Notice a dead worker within seconds, not minutes.
      timeouts: { scheduleToStartMs: 3000, heartbeatMs: 5000, idleFetchMs: 1000 },
    },
  };
}

async function expectExact(dir: string, key: string, records: number) {
  const contract = await loadContract(ORDERS_CONTRACT);
  const good = await readTable(contract, { targetPath: join(dir, "lake") });
  const bad = await readQuarantine(contract, { targetPath: join(dir, "lake") });
  let expectedBad = 0;
  for (let i = 0; i < records; i++) if (isBadOrder(i)) expectedBad++;
  const ids = good.map((r) => Number(r.order_id));
  expect(new Set(ids).size, "no duplicate good rows").toBe(ids.length);
  expect(ids.length, "every good row").toBe(records - expectedBad);
  expect(new Set(bad.map((b) => JSON.stringify(b.position))).size, "no duplicate quarantine rows").toBe(bad.length);
  expect(bad.length, "every bad row in quarantine").toBe(expectedBad);
  const store = new SQLiteCheckpointStore(join(dir, "checkpoints.sqlite"));
  const rec = await store.load(key);
  await store.close();
  expect(rec?.cursor, "cursor at the end").toMatchObject({ line: records });
}

describe.skipIf(!temporal)("stream workflow under chaos", () => {
  it("survives repeated SIGKILLs of its worker during a 50,000-record merge stream", async () => {
    const RECORDS = 50_000;
    const KILLS = 6;
    const { dir, input } = setup("kill", RECORDS);
    const streams = await StreamClient.connect({ address: temporal!.address });
    let worker: ChildProcess = await spawnWorker(temporal!.address);
    try {
      await streams.start(input);
      const key = input.checkpointKey!;
      let kills = 0;
      // Kill at batch milestones spread over the stream (50 batches), each a random moment after
      // the stream passed it, so every kill lands mid-stream and it must recover each time.
      const random = seededRandom("temporal chaos");
      const batches = RECORDS / input.batchSize!;
      const every = Math.floor(batches / (KILLS + 2));
      // Progress as the checkpoint store has it: the status query is answered between workflow
      // tasks, and one task may hold several fetches served by the worker (local activities).
      const committed = async () => {
        const store = new SQLiteCheckpointStore(input.checkpoint!);
        return ((await store.load(key).finally(() => store.close()))?.batchId ?? 0);
      };
      while (kills < KILLS) {
        const milestone = (kills + 1) * every;
        await waitFor(`batch ${milestone}`, async () => (await committed()) >= milestone, 120_000, 50);
        if ((await committed()) >= batches) break;
        await delay(Math.floor(random() * 100));
        worker.kill("SIGKILL");
        kills++;
        worker = await spawnWorker(temporal!.address);
      }
      expect(kills).toBe(KILLS);
      const result: StreamWorkflowResult = await streams.result(key);
      expect(result.totals.sourceCount).toBe(RECORDS);
      await stopProcess(worker);
      await expectExact(dir, key, RECORDS);
    } finally {
      await stopProcess(worker);
      await streams.close();
    }
  }, 600_000);

  it("completes a stream across a restart of the Temporal server", async () => {
    const RECORDS = 20_000;
    const { dir, input } = setup("restart", RECORDS);
    const streams = await StreamClient.connect({ address: temporal!.address });
    const worker = await spawnWorker(temporal!.address);
    try {
      await streams.start(input);
      const key = input.checkpointKey!;
      await waitFor("a few batches", async () => (await streams.status(key)).batchId >= 3, 120_000, 100);
      await temporal!.restart();
      const result: StreamWorkflowResult = await streams.result(key);
      expect(result.totals.sourceCount).toBe(RECORDS);
      await stopProcess(worker);
      await expectExact(dir, key, RECORDS);
    } finally {
      await stopProcess(worker);
      await streams.close();
    }
  }, 600_000);
});
