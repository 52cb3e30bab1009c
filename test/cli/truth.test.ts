/**
 * The CLI says what is wrong instead of running silently or failing as an "internal error":
 * loader warnings are printed, YAML that is not a contract is refused, misspelt commands and
 * flags get a did-you-mean, arguments are checked before any connection, and the Temporal
 * commands name the packages to install or the server they could not reach.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { connectTimeoutMsOf, TEMPORAL_PACKAGES } from "../../src/cli/temporal-connect.js";
import { writeOrders } from "../temporal/support.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-truth-"));
const ORDERS = readFileSync("examples/orders.yaml", "utf8");
const COMPOSE = "services:\n  kafka:\n    image: apache/kafka\n    ports: ['9092:9092']\n";

/** A TCP server that counts connections: proof that a command did (not) try to reach Temporal. */
let listener: Server;
let connections = 0;
let listenAddress = "";
/** An address where nothing listens (a port bound, then released). */
let closedAddress = "";

beforeAll(async () => {
  listener = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  listenAddress = `127.0.0.1:${(listener.address() as { port: number }).port}`;
  const spare = createServer();
  await new Promise<void>((resolve) => spare.listen(0, "127.0.0.1", resolve));
  closedAddress = `127.0.0.1:${(spare.address() as { port: number }).port}`;
  await new Promise<void>((resolve) => spare.close(() => resolve()));
});
afterAll(async () => {
  await new Promise<void>((resolve) => listener.close(() => resolve()));
  rmSync(tmp, { recursive: true, force: true });
});

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

function file(name: string, text: string): string {
  const path = join(tmp, name);
  writeFileSync(path, text);
  return path;
}

describe("run / start / schedule: what the loader knows", () => {
  it("run refuses a YAML file that is not a contract (exit 2) and reads nothing", async () => {
    const compose = file("docker-compose.yml", COMPOSE);
    const events = join(tmp, "compose-events.ndjson");
    writeOrders(events, 0, 50);
    const lake = join(tmp, "compose-lake");
    const r = await cli("run", compose, "--source", JSON.stringify({ type: "file", path: events }), "--target-path", lake);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${compose} is not a contract`);
    expect(r.stderr).toContain("model.fields");
    expect(r.stderr).not.toContain("internal error");
    expect(existsSync(lake)).toBe(false);
  });

  it("run prints each loader warning to stderr as file:line, then runs", async () => {
    // A key far from every known one is ignored by the loader; the user must hear about it.
    // (One a typo away from a known key is an error: test/cli/run-refusals.test.ts.)
    const contract = file("typo.yaml", `${ORDERS.trimEnd()}\nquarantine_typo_check: true\n`);
    const line = ORDERS.trimEnd().split("\n").length + 1;
    const events = join(tmp, "typo-events.ndjson");
    writeOrders(events, 0, 20);
    const r = await cli("run", contract, "--source", JSON.stringify({ type: "file", path: events }), "--target-path", join(tmp, "typo-lake"), "--json");
    expect(r.stderr).toContain(`lakelogic run: warning: ${contract}:${line}: quarantine_typo_check: unknown key 'quarantine_typo_check'`);
    expect(r.code).toBe(0);
  });

  it("start refuses a file that is not a contract before it connects", async () => {
    const compose = file("compose-start.yml", COMPOSE);
    const before = connections;
    const r = await cli("start", compose, "--address", listenAddress, "--source", '{"type":"file","path":"x"}');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("is not a contract");
    expect(connections).toBe(before);
  });

  it("schedule create without CONTRACT (or --every) is a usage error before any connection", async () => {
    const before = connections;
    const noContract = await cli("schedule", "create", "nightly", "--address", listenAddress);
    expect(noContract.code).toBe(2);
    expect(noContract.stderr).toContain("schedule create needs NAME and CONTRACT");
    const noEvery = await cli("schedule", "create", "nightly", "examples/orders.yaml", "--address", listenAddress);
    expect(noEvery.code).toBe(2);
    expect(noEvery.stderr).toContain("--every");
    const badMode = await cli("schedule", "create", "nightly", "examples/orders.yaml", "--every", "15m", "--mode", "continuous", "--address", listenAddress);
    expect(badMode.code).toBe(2);
    expect(connections).toBe(before);
  });

  it("schedule --help offers no mode it refuses", async () => {
    const r = await cli("schedule", "--help");
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/available_now \| continuous/);
    expect(r.stdout).not.toMatch(/--mode/);
    expect(r.stdout).not.toMatch(/--interval/);
    expect(r.stdout).toContain("--every");
  });
});

describe("did you mean", () => {
  it("suggests the command for a misspelt one", async () => {
    const r = await cli("lnit", "contracts");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown command "lnit". Did you mean "lint"?');
    expect((await cli("help", "schedul")).stderr).toContain('Did you mean "schedule"?');
  });

  it("suggests the flag for a misspelt one", async () => {
    const r = await cli("lint", "contracts", "--fail-onn", "warning");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Unknown option '--fail-onn' (did you mean --fail-on?)");
    expect((await cli("run", "examples/orders.yaml", "--batchsize", "5")).stderr).toContain("(did you mean --batch-size?)");
    expect((await cli("--verison")).stderr).toContain('Did you mean "--version"?');
  });
});

describe("Temporal commands without a server", () => {
  for (const argv of [["status"], ["pause", "stream::orders"], ["schedule", "delete", "nightly"]]) {
    it(`${argv.join(" ")}: exit 1 naming the address tried and how to start a server`, async () => {
      const r = await cli(...argv, "--address", closedAddress);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`cannot reach the Temporal server at ${closedAddress}`);
      expect(r.stderr).toContain("temporal server start-dev");
      expect(r.stderr).not.toContain("internal error");
    });
  }

  it("worker: exit 1 naming the address, not an internal error", async () => {
    const r = await cli("worker", "--address", closedAddress);
    expect(r.stderr).toContain(`cannot reach the Temporal server at ${closedAddress}`);
    expect(r.stderr).toContain("temporal server start-dev");
    expect(r.code).toBe(1);
  }, 60_000);

  it("--connect-timeout and $LAKELOGIC_TEMPORAL_CONNECT_TIMEOUT set the wait; bad values are usage errors", async () => {
    expect(connectTimeoutMsOf(undefined, {})).toBe(5000);
    expect(connectTimeoutMsOf("1.5", {})).toBe(1500);
    expect(connectTimeoutMsOf(undefined, { LAKELOGIC_TEMPORAL_CONNECT_TIMEOUT: "2" })).toBe(2000);
    expect(() => connectTimeoutMsOf("soon", {})).toThrow(/--connect-timeout must be a number of seconds/);
    const r = await cli("status", "--address", closedAddress, "--connect-timeout", "0");
    expect(r.code).toBe(2);
  });
});

describe("Temporal commands without the @temporalio packages", () => {
  it("name the packages to npm install and exit 2 (no stack trace)", async () => {
    const child = fileURLToPath(new URL("./temporal-nopeer-child.ts", import.meta.url));
    const failing = [["status", "--address", closedAddress], ["worker", "--address", closedAddress], ["schedule", "trigger", "nightly"], ["stop", "stream::orders"]];
    const commands = [...failing, ["start", "--help"]];
    const out = await new Promise<string>((resolve, reject) => {
      const p = spawn(process.execPath, ["--import", "tsx", child, JSON.stringify(commands)], { stdio: ["ignore", "pipe", "pipe"] });
      let text = "";
      let err = "";
      p.stdout.on("data", (c: Buffer) => (text += c.toString()));
      p.stderr.on("data", (c: Buffer) => (err += c.toString()));
      p.on("error", reject);
      p.on("exit", (code) => (code === 0 ? resolve(text) : reject(new Error(`child exited ${code}: ${err}`))));
    });
    const results = out.trim().split("\n").map((l) => JSON.parse(l) as { argv: string[]; code: number; stderr: string });
    expect(results).toHaveLength(commands.length);
    const help = results.pop() as { code: number; stdout?: string };
    // Help works without the SDK.
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: lakelogic start");
    for (const r of results) {
      expect(r.code, r.argv.join(" ")).toBe(2);
      expect(r.stderr).toContain(`npm install ${TEMPORAL_PACKAGES.join(" ")}`);
      expect(r.stderr).not.toContain("internal error");
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  }, 60_000);
});
