/**
 * Every front door resolves a stream's settings the same way (src/pipeline/settings.ts): the
 * same contract run through StreamSink, `lakelogic run` and the workflow input of
 * `lakelogic start` (run by the worker's runtime) uses one checkpoint key, one checkpoint
 * location and one lake — so each takes over where the one before stopped, reading only the new
 * records, and the lake holds every record once.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isBadOrder } from "../../examples/orders.js";
import { runStream } from "../../src/cli/commands/run.js";
import { streamInputOf } from "../../src/cli/temporal-flags.js";
import { loadContract } from "../../src/contract/index.js";
import { readTable } from "../../src/lake/index.js";
import { StreamSink } from "../../src/sink/index.js";
import { createSource } from "../../src/sources/registry.js";
import { StreamRuntime } from "../../src/temporal/stream-runtime.js";
import type { StreamSpec } from "../../workflows/types.js";
import { ORDERS_CONTRACT, writeFetched, writeOrders } from "../temporal/support.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** The demo contract in a directory of its own, writing a lake there; `source` replaces its source: block. */
function contractIn(source: string): { dir: string; contract: string; events: string; lake: string } {
  const dir = mkdtempSync(join(tmpdir(), "ll-doors-"));
  dirs.push(dir);
  const lake = join(dir, "lake");
  const text = readFileSync(ORDERS_CONTRACT, "utf8").replace("target_path: ./lake", `target_path: ${JSON.stringify(lake)}`);
  const contract = join(dir, "orders.yaml");
  writeFileSync(contract, `${text}\n${source}\n`);
  return { dir, contract, events: join(dir, "events.ndjson"), lake };
}

/** The `lakelogic start` input for the stream, drained by a worker's runtime as the workflow would. */
async function drainAsWorker(contractPath: string, sourceJson: string): Promise<{ key: string; sourceCount: number }> {
  const contract = await loadContract(contractPath);
  const input = streamInputOf(contractPath, { source: sourceJson, mode: "available_now" }, contract, { fallback: "continuous", fromContract: true });
  const spec: StreamSpec = input;
  const runtime = new StreamRuntime();
  try {
    const open = await runtime.openStream(spec);
    let previous = { cursor: open.cursor, batchId: open.batchId, totals: open.totals };
    let endCursor: string | null | undefined;
    let sourceCount = 0;
    for (let i = 0; i < 100; i++) {
      const r = await runtime.fetchBatch({ spec, key: open.key, cursor: previous.cursor, batchId: previous.batchId, endCursor }, new AbortController().signal);
      if (r.endCursor !== undefined) endCursor = r.endCursor;
      if (r.count > 0 || r.cursorMoved) {
        const w = await writeFetched(runtime, { spec, key: open.key, writerId: "worker", previous }, r);
        sourceCount += w.totals.sourceCount - previous.totals.sourceCount;
        previous = { cursor: r.cursor, batchId: w.batchId, totals: w.totals };
      }
      if (r.exhausted) return { key: open.key, sourceCount };
    }
    throw new Error("the drain did not end");
  } finally {
    await runtime.close();
  }
}

const cases = [
  {
    name: "a contract with its own source",
    source: "",
    checkpoint: (dir: string) => join(dir, "lake", "_lakelogic", "checkpoints.sqlite"),
  },
  {
    name: "a Python-form type: stream contract (its checkpoint beside the contract)",
    source: "source:\n  type: stream\n  path: orders\n  options: {kind: kafka, brokers: \"127.0.0.1:9\"}",
    checkpoint: (dir: string) => join(dir, "_checkpoints", "orders.sqlite"),
  },
];

describe("StreamSink, lakelogic run and lakelogic start resolve one stream alike", () => {
  it.each(cases)("$name: one key, one checkpoint, one lake; each takes over where the last stopped", async ({ source, checkpoint }) => {
    const c = contractIn(source);
    const fileSource = JSON.stringify({ type: "file", path: c.events });

    writeOrders(c.events, 0, 100);
    const sink = await new StreamSink(c.contract, await createSource(JSON.parse(fileSource) as { type: string }), { handleSignals: false }).run("available_now");
    expect(sink.sourceCount).toBe(100);

    writeOrders(c.events, 100, 200, true);
    const out: string[] = [];
    const io = { stdout: (t: string) => void out.push(t), stderr: () => undefined };
    expect(await runStream([c.contract, "--source", fileSource, "--mode", "available_now", "--json"], io)).toBe(0);
    const run = JSON.parse(out.join("")) as { checkpointKey: string; sourceCount: number; resumedFrom: unknown };
    expect(run.checkpointKey).toBe(sink.checkpointKey);
    expect(run.resumedFrom).toEqual(sink.cursor);
    expect(run.sourceCount).toBe(100);

    writeOrders(c.events, 200, 300, true);
    const worker = await drainAsWorker(c.contract, fileSource);
    expect(worker.key).toBe(sink.checkpointKey);
    expect(worker.sourceCount).toBe(100);

    // The one checkpoint file and the one lake the three wrote.
    expect(existsSync(checkpoint(c.dir))).toBe(true);
    expect(existsSync(join(dirname(c.contract), "lake", "lakelogic.duckdb"))).toBe(true);
    const rows = await readTable(await loadContract(c.contract), { targetPath: c.lake });
    const ids = rows.map((r) => Number(r.order_id)).sort((a, b) => a - b);
    expect(ids).toEqual(Array.from({ length: 300 }, (_, i) => i).filter((i) => !isBadOrder(i)));
  });
});
