/**
 * A contract in the Python package's own form with `format: delta` (the shape of its
 * examples/streaming/contracts/rides_kafka.yaml: `type: stream` source, quarantine under a path
 * in delta, a SQLite checkpoint beside it) runs unchanged through `lakelogic run` with a
 * `--source`, and a second run reads only what is new. Read back by delta-rs.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { readDelta } from "../support/delta.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-delta-run-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const CONTRACT = `version: 1.0.0
dataset: rides
info: {title: bronze_rides_kafka}
primary_key: [ride_id]
source:
  type: stream
  options:
    kind: kafka
    brokers: env:KAFKA_BROKERS
    topic: rides
    starting_offsets: earliest
    checkpoint: ${join(tmp, "data/checkpoints/rides_kafka.sqlite")}
    batch_size: 100
    trigger: available_now
model:
  fields:
    - {name: ride_id, type: long, required: true}
    - {name: city, type: string, required: true}
    - {name: fare, type: double, required: true}
    - {name: status, type: string}
quality:
  row_rules:
    - {name: fare_not_negative, sql: "fare >= 0"}
materialization:
  strategy: merge
  format: delta
  target_path: ${join(tmp, "data/bronze")}
quarantine:
  target: ${join(tmp, "data/quarantine")}
  format: delta
`;

function rides(from: number, to: number): string {
  let text = "";
  for (let i = from; i < to; i++) text += JSON.stringify({ ride_id: i, city: "Leeds", fare: i % 10 === 0 ? -1 : 7.5, status: "done" }) + "\n";
  return text;
}

async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(["run", ...argv], { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe("lakelogic run with a Python-form delta contract", () => {
  it("writes Delta tables and resumes from its checkpoint", async () => {
    const contract = join(tmp, "rides_kafka.yaml");
    writeFileSync(contract, CONTRACT);
    const events = join(tmp, "rides.ndjson");
    writeFileSync(events, rides(0, 250) + "{not json\n");
    const source = JSON.stringify({ type: "file", path: events });
    const first = await run(contract, "--source", source);
    expect(first.code, first.stderr).toBe(0);
    appendFileSync(events, rides(200, 300));
    const second = await run(contract, "--source", source);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/records\s+100: good 90, quarantined 10/);

    const rows = readDelta(join(tmp, "data/bronze/rides")).rows;
    const ids = rows.map((r) => Number(r["ride_id"])).sort((a, b) => a - b);
    // Merge on ride_id: 200..249 came twice and are there once; every 10th fare was negative.
    expect(ids).toEqual([...Array(300).keys()].filter((i) => i % 10 !== 0));
    const quarantine = readDelta(join(tmp, "data/quarantine/rides")).rows;
    // 25 negative fares in the first run, the line that is not JSON, and 10 in the appended lines
    // (new lines of the file: rows of their own, even for ride ids seen before).
    expect(quarantine.some((q) => String(q["raw"]) === "{not json")).toBe(true);
    expect(quarantine.length).toBe(25 + 1 + 10);
  });
});
