import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ApplicationFailure } from "@temporalio/common";
import { MockActivityEnvironment } from "@temporalio/testing";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createSharedActivities } from "../../activities/index.js";
import { orderEvents } from "../../examples/orders.js";
import { loadContract } from "../../src/contract/index.js";
import type { LakeFormat } from "../../src/contract/types.js";
import { readTable, TableContractError } from "../../src/lake/index.js";
import { StreamRunError, StreamSink } from "../../src/sink/index.js";
import { StreamRuntime } from "../../src/temporal/stream-runtime.js";
import type { StreamSpec } from "../../workflows/types.js";
import { writeOrders } from "../temporal/support.js";

/**
 * Both runtimes open the lake through src/pipeline/open.ts, so a contract changed under an
 * existing table (docs/lake.md, "The table's contract") stops StreamSink before it reads a
 * record, and fails the Temporal runtime's openStream with an error its activities hand to
 * Temporal as non-retryable: a retry would meet the same table.
 */
const ORDERS = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));
const noop = () => undefined;
const QUIET = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const runtimes: StreamRuntime[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
});

describe.each<LakeFormat>(["duckdb", "parquet"])("%s: a contract changed under an existing table", (format) => {
  it("is refused by StreamSink before a record is read, and by the Temporal runtime without a retry", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ll-table-contract-"));
    dirs.push(dir);
    const targetPath = join(dir, "lake");
    const yaml = readFileSync(ORDERS, "utf8").replace("format: duckdb", `format: ${format}`);
    const original = join(dir, "orders.yaml");
    const rekeyed = join(dir, "orders-rekeyed.yaml");
    writeFileSync(original, yaml);
    writeFileSync(rekeyed, yaml.replace("primary_key: [order_id]", "primary_key: [order_id, customer_id]"));
    await new StreamSink(original, orderEvents(50), { targetPath }).run("available_now");
    const before = await readTable(await loadContract(original), { targetPath });
    expect(before.length).toBeGreaterThan(0);

    let pulled = 0;
    const counted = {
      [Symbol.iterator]: () => {
        const it = orderEvents(50)[Symbol.iterator]();
        return { next: () => (pulled++, it.next()) };
      },
    };
    const err = await new StreamSink(rekeyed, counted, { targetPath }).run("available_now").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamRunError);
    const cause = (err as StreamRunError).cause;
    expect(cause).toBeInstanceOf(TableContractError);
    expect((cause as TableContractError).changes).toEqual([{ option: "primary_key", was: "[order_id]", now: "[order_id, customer_id]" }]);
    expect(pulled).toBe(0);

    const events = join(dir, "events.ndjson");
    writeOrders(events, 0, 50);
    const spec: StreamSpec = { contract: rekeyed, source: { type: "file", path: events }, mode: "available_now", checkpointKey: "k", targetPath };
    const runtime = new StreamRuntime();
    runtimes.push(runtime);
    const direct = await runtime.openStream(spec).catch((e: unknown) => e);
    expect(direct).toBeInstanceOf(TableContractError);
    expect((direct as TableContractError).retriable).toBe(false);
    const activities = createSharedActivities(runtime, "worker-queue");
    const failure = await new MockActivityEnvironment(undefined, { logger: QUIET }).run((s: StreamSpec) => activities.openStream(s), spec).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as ApplicationFailure).nonRetryable).toBe(true);
    expect((failure as ApplicationFailure).type).toBe("TableContractError");
    expect((failure as ApplicationFailure).message).toMatch(/primary_key: \[order_id\] → \[order_id, customer_id\]/);

    expect(await readTable(await loadContract(original), { targetPath })).toEqual(before);
  });
});
