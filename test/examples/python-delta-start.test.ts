/**
 * Three of the Python package's delta example contracts run through `lakelogic start --wait` on a
 * Temporal dev server and a worker in its own process: a bronze append, a silver merge and the
 * reference gold merge with a composite key, each unchanged, with `--var` values for the
 * placeholders the examples leave to the user. The good rows land in the contract's Delta table and
 * the row missing a required field in its quarantine, counted by delta-rs; the workflow's result
 * reports the same counts. (The same contracts through `lakelogic run`:
 * python-delta-contracts.test.ts.)
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { loadContract } from "../../src/contract/index.js";
import { stopProcess } from "../support/proc.js";
import { requireService } from "../support/services.js";
import { startTemporal } from "../support/temporal.js";
import { spawnWorker } from "../temporal/support.js";
import { countDelta, deltaTables, records, SDIST, varsFor } from "./python-examples.js";

const RIDEFLOW = "examples/colab/assets/domains_rideflow/marketplace/rideflow/contracts";
const CONTRACTS = [
  `${RIDEFLOW}/bronze/bronze_rideflow_trip_requests_v1.0.yaml`,
  `${RIDEFLOW}/silver/silver_rideflow_trips_v1.0.yaml`,
  "examples/reference/gold.annotated.yaml",
];
const TASK_QUEUE = "python-examples";

const temporal = await requireService("python example contracts: lakelogic start", () => startTemporal());
const tmp = mkdtempSync(join(tmpdir(), "lakelogic-pystart-"));
let worker: ChildProcess | undefined;
afterAll(async () => {
  if (worker) await stopProcess(worker);
  await temporal?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe.skipIf(!temporal)("the Python package's delta example contracts on Temporal", () => {
  it("run unchanged through lakelogic start --wait", { timeout: 600_000 }, async () => {
    worker = await spawnWorker(temporal!.address, TASK_QUEUE);
    for (const [i, rel] of CONTRACTS.entries()) {
      const file = join(SDIST, rel);
      const root = join(tmp, String(i));
      mkdirSync(root, { recursive: true });
      const vars = varsFor(root);
      const input = records(await loadContract(file, { vars }));
      expect(input.bad, `${rel} has a required field to leave out`).toBe(1);
      const events = join(root, "input.ndjson");
      writeFileSync(events, input.lines);
      const argv = ["start", file, "--source", JSON.stringify({ type: "file", path: events }), "--target-path", join(root, "lake"), "--mode", "available_now", "--wait", "--json"];
      for (const [k, v] of Object.entries(vars)) argv.push("--var", `${k}=${v}`);
      argv.push("--address", temporal!.address, "--task-queue", TASK_QUEUE);
      const r = await cli(argv);
      expect(r.code, `${rel}: ${r.stderr}`).toBe(0);
      // Two JSON documents: the start, then the workflow's result.
      const result = JSON.parse(r.stdout.trim().split("\n").pop()!) as { goodCount: number; badCount: number; stoppedBy: string };
      expect(result, rel).toMatchObject({ goodCount: input.good, badCount: input.bad, stoppedBy: "end" });

      const tables = deltaTables(root);
      const counts = countDelta(tables);
      const rows = Object.fromEntries(tables.map((u) => [relative(root, u), counts[u]]));
      const good = Object.entries(rows).filter(([k]) => !/quarantine/.test(k));
      const quarantine = Object.entries(rows).filter(([k]) => /quarantine/.test(k));
      expect(good.map(([, n]) => n), `${rel}: ${JSON.stringify(rows)}`).toEqual([input.good]);
      expect(quarantine.map(([, n]) => n), `${rel}: ${JSON.stringify(rows)}`).toEqual([input.bad]);
    }
  });
});
