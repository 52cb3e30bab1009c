/**
 * format delta on Azure Blob Storage (`az://`), against Azurite on loopback: credentials from
 * the environment (the helper inherits it, as on a machine with AZURE_* set), merges, the
 * stream's checkpoint in the table's commits, read back by delta-rs. (`gs://` is not tested here:
 * fake-gcs-server does not serve the XML listing API that delta-rs's object store uses.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setEnv } from "../support/env.js";
import type { CheckpointRecord } from "../../src/checkpoint/types.js";
import { openLake } from "../../src/lake/index.js";
import { readDelta } from "../support/delta.js";
import { AZURITE_ACCOUNT, startAzurite, type AzuriteServer } from "../support/objectstores.js";
import { makeContract } from "./helpers.js";

let az: AzuriteServer;
let env: Record<string, string>;
let restoreEnv = (): void => undefined;

beforeAll(async () => {
  az = await startAzurite();
  await az.createBucket("lake");
  env = {
    AZURE_STORAGE_ACCOUNT_NAME: AZURITE_ACCOUNT,
    AZURE_STORAGE_ACCOUNT_KEY: /AccountKey=([^;]+)/.exec(az.connectionString)![1]!,
    AZURE_STORAGE_USE_EMULATOR: "true",
    AZURITE_BLOB_STORAGE_URL: az.endpoint,
  };
  restoreEnv = setEnv(env);
}, 120_000);

afterAll(async () => {
  restoreEnv();
  await az?.stop();
});

const zero = { sourceCount: 1, goodCount: 1, badCount: 0, supersededCount: 0 };
const record = (batchId: number): CheckpointRecord => ({ key: "stream::az", cursor: BigInt(batchId), batchId, committedAt: new Date(1_700_000_000_000), batch: zero, totals: zero, writerId: "w" });

describe("format delta on az://", () => {
  it("merges, keeps the checkpoint in the table, and delta-rs reads it back", async () => {
    const contract = makeContract({ format: "delta", strategy: "merge", primaryKey: ["id"] });
    const lake = await openLake(contract, { targetPath: "az://lake/bronze" });
    await lake.write({ batchId: 1, good: [{ id: 1, name: "a" }, { id: 2, name: "b" }], bad: [], checkpoint: record(1) });
    await lake.write({ batchId: 2, good: [{ id: 2, name: "B" }], bad: [{ record: { id: "x" }, errors: [{ ruleId: "r", message: "bad" }] }], checkpoint: record(2) });
    expect((await lake.checkpointStore!().load("stream::az"))?.batchId).toBe(2);
    await lake.close();
    const rows = readDelta("az://lake/bronze/orders", env).rows.sort((a, b) => Number(a["id"]) - Number(b["id"]));
    expect(rows).toEqual([{ id: 1, name: "a" }, { id: 2, name: "B" }]);
    expect(readDelta("az://lake/bronze/orders_quarantine", env).rows).toHaveLength(1);
  }, 120_000);
});
