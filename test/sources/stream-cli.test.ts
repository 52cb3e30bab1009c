/**
 * The contract's run settings and `--var` as `lakelogic run`, `start` and `schedule create` use
 * them (no Temporal server: the workflow input is checked as built), and the worker loading the
 * contract with the stream's vars.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { streamInputOf } from "../../src/cli/temporal-flags.js";
import { loadContract } from "../../src/contract/index.js";
import { StreamRuntime } from "../../src/temporal/stream-runtime.js";
import { writeOrders } from "../temporal/support.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-stream-cli-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const FIELDS = "model: {fields: [{name: order_id, type: long, required: true}, {name: amount, type: double}]}\nprimary_key: [order_id]\nmaterialization: {strategy: merge, format: duckdb}\n";
const STREAM = `dataset: rides
${FIELDS}source:
  type: stream
  path: rides
  options:
    kind: kafka
    brokers: env:KAFKA_BROKERS
    trigger: continuous
    processing_time: 30 seconds
    batch_size: 250
    security_protocol: SASL_SSL
    sasl_username: alice
    sasl_password: env:KAFKA_PASSWORD
`;

function write(name: string, text: string): string {
  const file = join(tmp, name);
  writeFileSync(file, text);
  return file;
}

async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(["run", ...argv, "--json"], { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe("start / schedule: the workflow input from a Python-form contract", () => {
  it("carries the contract's settings, the secrets as references and the vars; flags override", async () => {
    const file = write("rides.yaml", STREAM);
    const contract = await loadContract(file);
    const input = streamInputOf(file, { var: ["region=eu"], env: "prod" }, contract, { fallback: "continuous", fromContract: true });
    expect(input).toMatchObject({
      contract: file,
      mode: "continuous",
      batchSize: 250,
      maxWaitMs: 30_000,
      checkpoint: join(tmp, "_checkpoints", "rides.sqlite"),
      checkpointKey: "stream::rides",
      vars: { region: "eu" },
      environment: "prod",
    });
    const options = input.source["options"] as Record<string, unknown>;
    expect(options).toMatchObject({ sasl_password: "env:KAFKA_PASSWORD", brokers: "env:KAFKA_BROKERS", group_id: "lakelogic-rides" });
    expect(JSON.stringify(input)).not.toMatch(/alice-secret/);

    const flagged = streamInputOf(file, { mode: "available_now", "batch-size": "10", "max-wait-ms": "5", checkpoint: "s3://b/ck/rides" }, contract, { fallback: "continuous", fromContract: true });
    expect(flagged).toMatchObject({ mode: "available_now", batchSize: 10, maxWaitMs: 5, checkpoint: "s3://b/ck/rides" });
    // A schedule is the cadence: each run drains, whatever the trigger says.
    expect(streamInputOf(file, {}, contract, { fallback: "available_now", fromContract: false }).mode).toBe("available_now");
    expect(() => streamInputOf(file, { checkpoint: "ftp://x/ck" }, contract, { fallback: "continuous", fromContract: true })).toThrow(/ftp/);
    expect(() => streamInputOf(file, { var: ["region"] }, contract, { fallback: "continuous", fromContract: true })).toThrow(/--var expects NAME=VALUE/);
  });
});

describe("lakelogic run --var", () => {
  it("fills the contract's placeholders; the contract's trigger and batch size apply unless flags say otherwise", async () => {
    const events = join(tmp, "orders.ndjson");
    writeOrders(events, 0, 30);
    const file = write("orders-{x}.yaml".replace("{x}", "var"), `dataset: orders\n${FIELDS}trigger: available_now\nsource: {type: file, path: "{events_file}"}\n`);
    const missing = await run(file, "--checkpoint", "memory", "--target-path", join(tmp, "lake-var"));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/events_file/);
    const r = await run(file, "--var", `events_file=${events}`, "--checkpoint", "memory", "--target-path", join(tmp, "lake-var"), "--batch-size", "10");
    // Nothing on stderr but the start line and the per-batch log lines.
    const lines = r.stderr.split("\n").filter((l) => l !== "");
    expect(lines.filter((l) => l.includes(" INFO  stream started "))).toHaveLength(1);
    expect(lines.filter((l) => !l.includes(" INFO  batch committed ") && !l.includes(" INFO  stream started "))).toEqual([]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ sourceCount: 30, batches: 3 });
    const bad = await run(file, "--var", "=x");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--var expects NAME=VALUE/);
  });
});

describe("the Temporal worker", () => {
  it("loads the contract with the stream's vars", async () => {
    const file = write("templated.yaml", `dataset: "orders_{region}"\n${FIELDS}`);
    const runtime = new StreamRuntime();
    const contract = await runtime.contract({ contract: file, vars: { region: "eu" } });
    expect(contract.dataset).toBe("orders_eu");
    expect((await runtime.contract({ contract: file, vars: { region: "us" } })).dataset).toBe("orders_us");
  });
});
