/**
 * A contract in the Python package's form for DuckLake (`format: ducklake`, a
 * `table:<catalog>.<schema>.<table>` target, the catalog and data path in
 * `metadata.ducklake_metadata` / `ducklake_data_path`) runs unchanged through `lakelogic run`
 * with a `--source`; a second run reads only what is new. Read back by DuckDB's DuckLake extension.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { queryDuckLake } from "../support/ducklake.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-ducklake-run-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const CONTRACT = `version: 1.0.0
info: {title: dim rides, target_layer: silver}
metadata:
  ducklake_metadata: ${join(tmp, "catalog.ducklake")}
  ducklake_data_path: ${join(tmp, "data")}/
primary_key: [ride_id]
model:
  fields:
    - {name: ride_id, type: long, required: true}
    - {name: city, type: string, required: true}
    - {name: fare, type: double, required: true}
quality:
  row_rules:
    - {name: fare_not_negative, sql: "fare >= 0"}
materialization:
  strategy: merge
  format: ducklake
  target_path: "table:lake.dims.rides"
quarantine:
  target: "table:lake.dims.rides_quarantine"
`;

function rides(from: number, to: number): string {
  let text = "";
  for (let i = from; i < to; i++) text += JSON.stringify({ ride_id: i, city: "Leeds", fare: i % 10 === 0 ? -1 : 7.5 }) + "\n";
  return text;
}

async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(["run", ...argv], { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe("lakelogic run with a Python-form ducklake contract", () => {
  it("writes the catalog's tables and resumes from the stream's row in the catalog", async () => {
    const contract = join(tmp, "dim_rides.yaml");
    writeFileSync(contract, CONTRACT);
    const events = join(tmp, "rides.ndjson");
    writeFileSync(events, rides(0, 250));
    const source = JSON.stringify({ type: "file", path: events });
    const first = await run(contract, "--source", source);
    expect(first.code, first.stderr).toBe(0);
    appendFileSync(events, rides(200, 300));
    const second = await run(contract, "--source", source);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/records\s+100: good 90, quarantined 10/);

    const lake = { catalog: join(tmp, "catalog.ducklake"), dataPath: `${join(tmp, "data")}/` };
    const ids = (await queryDuckLake(lake, "SELECT ride_id FROM lake.dims.rides ORDER BY ride_id")).map((r) => Number(r["ride_id"]));
    // Merge on ride_id: 200..249 came twice and are there once; every 10th fare was negative.
    expect(ids).toEqual([...Array(300).keys()].filter((i) => i % 10 !== 0));
    const quarantined = await queryDuckLake(lake, "SELECT count(*) AS n, count(DISTINCT quarantine_id) AS ids FROM lake.dims.rides_quarantine");
    // 25 negative fares in the first run and 10 in the appended lines (new lines of the file:
    // rows of their own, even for ride ids seen before).
    expect(quarantined).toEqual([{ n: 35, ids: 35 }]);
  });
});
