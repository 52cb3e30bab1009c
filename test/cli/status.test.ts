/**
 * `lakelogic status` of a stream run in a process (`lakelogic run`): no workflow holds it, so the
 * answer comes from its checkpoint store, and says so — when the Temporal server has no
 * workflow of the key, and when no server answers. A key nothing knows is "no stream named KEY"
 * (exit 1), never an internal error.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { freePort } from "../support/proc.js";
import { requireService } from "../support/services.js";
import { startTemporal } from "../support/temporal.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-status-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const events = join(tmp, "rides.ndjson");
writeFileSync(events, Array.from({ length: 25 }, (_, i) => JSON.stringify({ ride_id: i, fare: i % 10 === 5 ? -1 : 7.5 })).join("\n") + "\n");

function contract(name: string, format: string): string {
  const path = join(tmp, `${name}.yaml`);
  writeFileSync(
    path,
    `version: "1.0"
dataset: rides
primary_key: [ride_id]
model:
  fields:
    - {name: ride_id, type: long, required: true}
    - {name: fare, type: double, required: true}
quality:
  row_rules:
    - {name: fare_not_negative, sql: "fare >= 0"}
materialization:
  strategy: merge
  format: ${format}
  target_path: ${join(tmp, `lake-${name}`)}
`,
  );
  return path;
}

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

const SQLITE = contract("sqlite", "parquet");
const TARGET = contract("target", "delta");
const sqliteCheckpoint = join(tmp, "lake-sqlite", "_lakelogic", "checkpoints.sqlite");

beforeAll(async () => {
  for (const path of [SQLITE, TARGET]) {
    const run = await cli("run", path, "--source", JSON.stringify({ type: "file", path: events }), "--batch-size", "10");
    expect(run.code, run.stderr).toBe(0);
  }
}, 120_000);

const FROM_CHECKPOINT = {
  source: "checkpoint store",
  checkpointKey: "stream::rides",
  batchId: 3,
  sourceCount: 25,
  goodCount: 23,
  badCount: 2,
  lastBatch: { sourceCount: 5, goodCount: 5, badCount: 0 },
  cursor: expect.objectContaining({ line: 25 }),
};

describe("lakelogic status without a Temporal server", () => {
  let address: string;
  beforeAll(async () => {
    // A port nothing listens on: the connection is refused at once.
    address = `127.0.0.1:${await freePort()}`;
  });

  it("KEY --checkpoint FILE: the status from the SQLite checkpoint, saying so", async () => {
    const r = await cli("status", "stream::rides", "--checkpoint", sqliteCheckpoint, "--address", address, "--json");
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ...FROM_CHECKPOINT, location: sqliteCheckpoint, note: `the Temporal server at ${address} does not answer` });

    const text = await cli("status", "stream::rides", "--checkpoint", sqliteCheckpoint, "--address", address);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^source +checkpoint store ${sqliteCheckpoint}$`, "m"));
    expect(text.stdout).toMatch(/^batchId +3$/m);
  });

  it("--contract: the key and the checkpoint `lakelogic run` uses (here: in the Delta table)", async () => {
    const r = await cli("status", "--contract", TARGET, "--address", address, "--json");
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ...FROM_CHECKPOINT, location: expect.stringMatching(/^the lake \(delta /) });
  }, 60_000);

  it("a key the checkpoint store does not hold: no stream named KEY, exit 1", async () => {
    const r = await cli("status", "stream::nope", "--checkpoint", sqliteCheckpoint, "--address", address);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no stream named stream::nope: the Temporal server at ${address} does not answer, and ${sqliteCheckpoint} holds no checkpoint for it`);
  });

  it("without a checkpoint to fall back to, the unreachable server is the answer (exit 1)", async () => {
    const r = await cli("status", "stream::rides", "--address", address);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot reach the Temporal server/);
  });

  it("--checkpoint without a KEY or --contract is a usage error", async () => {
    const r = await cli("status", "--checkpoint", sqliteCheckpoint, "--address", address);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--checkpoint needs the stream's KEY/);
  });
});

const temporal = await requireService("cli: status without a workflow", () => startTemporal());
afterAll(() => temporal?.stop());

describe.skipIf(!temporal)("lakelogic status with a Temporal server that has no workflow of the key", () => {
  it("falls back to the checkpoint store, saying why", async () => {
    const r = await cli("status", "--contract", SQLITE, "--address", temporal!.address, "--json");
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      ...FROM_CHECKPOINT,
      location: sqliteCheckpoint,
      note: `the Temporal server at ${temporal!.address} has no workflow lakelogic:stream::rides`,
    });
  }, 60_000);

  it("an unknown key: no stream named KEY, exit 1 (not an internal error)", async () => {
    const r = await cli("status", "stream::nope", "--address", temporal!.address);
    expect(r.code).toBe(1);
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.stderr).toContain("no stream named stream::nope: the Temporal server at");
    expect(r.stderr).toMatch(/has no workflow lakelogic:stream::nope\. For a stream run in a process .*--contract CONTRACT or --checkpoint LOCATION/);
  }, 60_000);

  it("pause of an unknown key: no stream named KEY, exit 1", async () => {
    const r = await cli("pause", "stream::nope", "--address", temporal!.address);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no stream named stream::nope: the Temporal server has no workflow lakelogic:stream::nope/);
  }, 60_000);
});
