/**
 * `lakelogic run` refuses, before reading anything, a config that would leak a secret or run
 * against the wrong place: a literal secret in the source, an unresolved `{placeholder}`, a
 * checkpoint location no store can open, a contract that does not say what its author meant (a
 * misspelt section, a sql rule DuckDB does not parse). Each exits 2 (bad input) with the reason.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { streamInputOf } from "../../src/cli/temporal-flags.js";
import { loadContract } from "../../src/contract/index.js";
import { writeOrders } from "../temporal/support.js";

const REPO = resolve(".");
const ORDERS = readFileSync(join(REPO, "examples", "orders.yaml"), "utf8");
const tmp = mkdtempSync(join(tmpdir(), "lakelogic-refusals-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const LITERAL = "hunter2-not-for-logs";

/** The demo orders contract with `extra` appended (a `source:` block, say), written to a file. */
function contract(name: string, extra: string, base = ORDERS): string {
  const file = join(tmp, `${name}.yaml`);
  writeFileSync(file, `${base.trimEnd()}\n${extra}`);
  return file;
}

async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(["run", ...argv], { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

/** The command as a user runs it from a checkout: `tsx src/cli/main.ts run …`, in its own process. */
function runProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done, reject) => {
    const tsx = join(REPO, "node_modules", ".bin", "tsx");
    const child = spawn(tsx, [join(REPO, "src", "cli", "main.ts"), "run", ...args], {
      cwd: tmp,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

const SERVICEBUS_MESSAGE =
  'source servicebus: connectionString: a secret must not be written into a config; use "env:SERVICEBUS_CONNECTION_STRING" (or ${ENV:NAME} inside a string)';

describe("lakelogic run: a literal secret", () => {
  it("in the contract's source block exits 2, naming the option and the env: form, never the value", async () => {
    const file = contract(
      "literal-secret",
      `source:\n  type: servicebus\n  connection_string: "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=${LITERAL}"\n  queue_name: orders\n`,
    );
    const r = await runProcess([file, "--target-path", join(tmp, "lake-secret"), "--checkpoint", "memory"]);
    expect(r.stderr).toContain(SERVICEBUS_MESSAGE);
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).not.toContain(LITERAL);
  });

  it("in --source exits 2 the same way; a reference is accepted", async () => {
    const source = { type: "servicebus", connectionString: `Endpoint=sb://ns/;SharedAccessKeyName=l;SharedAccessKey=${LITERAL}`, queueName: "orders" };
    const r = await run(join(REPO, "examples", "orders.yaml"), "--source", JSON.stringify(source), "--checkpoint", "memory");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(SERVICEBUS_MESSAGE);
    expect(r.stderr).not.toContain(LITERAL);
    // With the variable unset, the refusal is about the variable, not about a literal.
    const byReference = await run(join(REPO, "examples", "orders.yaml"), "--source", JSON.stringify({ ...source, connectionString: "env:LL_TEST_UNSET_SB" }));
    expect(byReference.code).toBe(2);
    expect(byReference.stderr).toMatch(/connectionString: refers to the environment variable LL_TEST_UNSET_SB, which is not set/);
  });

  it("in a Python `type: stream` source (sasl_password) exits 2", async () => {
    const file = contract(
      "literal-sasl",
      `source:\n  type: stream\n  options:\n    kind: kafka\n    brokers: 127.0.0.1:9\n    topic: orders\n    sasl_username: reader\n    sasl_password: ${LITERAL}\n`,
    );
    const r = await run(file, "--target-path", join(tmp, "lake-sasl"), "--checkpoint", "memory");
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/sasl_?[pP]assword: a secret must not be written into a config; use "env:/);
    expect(r.stderr).not.toContain(LITERAL);
  });
});

describe("lakelogic run: an unresolved {placeholder}", () => {
  it("exits 2 naming the placeholder and where it is", async () => {
    const base = ORDERS.replace("target_path: ./lake", 'target_path: "{lake_root}/orders"');
    expect(base).not.toBe(ORDERS);
    const file = contract("placeholder", "", base);
    const events = join(tmp, "placeholder.ndjson");
    writeOrders(events, 0, 10);
    const r = await run(file, "--source", JSON.stringify({ type: "file", path: events }), "--checkpoint", "memory");
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/lake_root/);
    expect(r.stderr).toMatch(/materialization\.target_path/);
  });
});

describe("lakelogic run: a checkpoint location no store can open", () => {
  it("--checkpoint ftp://… exits 2 naming the scheme, before reading", async () => {
    const events = join(tmp, "ftp.ndjson");
    writeOrders(events, 0, 10);
    const r = await run(join(REPO, "examples", "orders.yaml"), "--source", JSON.stringify({ type: "file", path: events }), "--target-path", join(tmp, "lake-ftp"), "--checkpoint", "ftp://backup.example.com/ck");
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/ftp/);
    expect(r.stdout).toBe("");
  });

  it("source.options.checkpoint: ftp://… in a `type: stream` contract exits 2", async () => {
    const file = contract(
      "ftp-checkpoint",
      `source:\n  type: stream\n  options:\n    kind: kafka\n    brokers: 127.0.0.1:9\n    topic: orders\n    checkpoint: ftp://backup.example.com/ck\n`,
    );
    const r = await run(file, "--target-path", join(tmp, "lake-ftp2"));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/checkpoint/);
    expect(r.stderr).toMatch(/ftp/);
  });
});

describe("lakelogic run: a contract that does not say what its author meant", () => {
  /** `lakelogic run <contract>` over ten order events, into a lake of its own. */
  async function runOrders(name: string, base: string): Promise<{ file: string; lake: string; code: number; stderr: string }> {
    const file = contract(name, "", base);
    const events = join(tmp, `${name}.ndjson`);
    writeOrders(events, 0, 10);
    const lake = join(tmp, `lake-${name}`);
    const r = await run(file, "--source", JSON.stringify({ type: "file", path: events }), "--target-path", lake, "--checkpoint", "memory");
    return { file, lake, code: r.code, stderr: r.stderr };
  }

  it("a misspelt section (materialisation) exits 2 with the did-you-mean, instead of running as append", async () => {
    const base = ORDERS.replace("materialization:\n", "materialisation:\n");
    expect(base).not.toBe(ORDERS);
    const r = await runOrders("materialisation", base);
    expect(r.stderr).toContain(`${r.file}:35:1 materialisation: unknown key 'materialisation' in the contract (did you mean materialization?)`);
    expect(r.code).toBe(2);
    expect(existsSync(r.lake)).toBe(false);
  });

  it("a misspelt field key (requird) exits 2, instead of leaving the field nullable", async () => {
    const base = ORDERS.replace("{ name: status, type: string, required: true }", "{ name: status, type: string, requird: true }");
    expect(base).not.toBe(ORDERS);
    const r = await runOrders("requird", base);
    expect(r.stderr).toMatch(/:15:37 model\.fields\[4\]\.requird: unknown key 'requird' in a field \(did you mean required\?\)/);
    expect(r.code).toBe(2);
  });

  it("a sql rule DuckDB does not parse exits 2 at the rule's sql key, before a record is read", async () => {
    const base = ORDERS.replace('sql: "quantity BETWEEN 1 AND 1000"', 'sql: "quantity >= 0 AND"');
    expect(base).not.toBe(ORDERS);
    const r = await runOrders("sql-syntax", base);
    expect(r.stderr).toContain(`${r.file}:32:7 quality.row_rules[3].sql: Parser Error: syntax error at end of input`);
    expect(r.stderr).not.toContain("SELECT");
    expect(r.code).toBe(2);
    expect(existsSync(r.lake)).toBe(false);
  });

  it("a sql rule naming a column the contract lacks exits 2 at the rule, naming the column", async () => {
    const r = await runOrders("sql-column", ORDERS.replace('sql: "quantity BETWEEN 1 AND 1000"', 'sql: "qty BETWEEN 1 AND 1000"'));
    expect(r.stderr).toContain(`${r.file}:32:7 quality.row_rules[3].sql: qty is not a field of this contract`);
    expect(r.code).toBe(2);
    expect(existsSync(r.lake)).toBe(false);
  });

  it("a sql rule DuckDB cannot bind over the typed fields exits 2 with DuckDB's reason", async () => {
    const r = await runOrders("sql-types", ORDERS.replace('sql: "quantity BETWEEN 1 AND 1000"', 'sql: "length(quantity) < 5"'));
    expect(r.stderr).toContain(`${r.file}:32:7 quality.row_rules[3].sql: Binder Error: No function matches the given name and argument types 'length(BIGINT)'`);
    expect(r.code).toBe(2);
    expect(existsSync(r.lake)).toBe(false);
  });
});

describe("a lake location that is a URI", () => {
  it.each(["s3://bucket/lake", "ftp://backup.example.com/lake"])("run --target-path %s exits 2, and no local directory is made of it", async (uri) => {
    const events = join(tmp, "uri.ndjson");
    writeOrders(events, 0, 5);
    const cwd = process.cwd();
    process.chdir(tmp);
    try {
      const r = await run(join(REPO, "examples", "orders.yaml"), "--source", JSON.stringify({ type: "file", path: events }), "--target-path", uri, "--checkpoint", "memory");
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/targetPath: .*the lake format duckdb writes a directory on this machine's disk/);
      // …and names the format that writes object storage.
      expect(r.stderr).toMatch(/materialization\.format: delta \(which writes s3:\/\/.*\) or ducklake/);
      expect(existsSync(join(tmp, uri.split(":")[0] + ":"))).toBe(false);
    } finally {
      process.chdir(cwd);
    }
  });

  it("start refuses it before the path is made absolute for the workers, and so does a contract's target_path", async () => {
    const file = contract("uri-target", `source: {type: file, path: x.ndjson}\n`, ORDERS.replace("target_path: ./lake", "target_path: s3://bucket/lake"));
    const loaded = await loadContract(file);
    expect(() => streamInputOf(file, {}, loaded, { fallback: "continuous", fromContract: true })).toThrow(/targetPath: s3:\/\/bucket\/lake: the lake format duckdb writes/);
    const plain = await loadContract(join(REPO, "examples", "orders.yaml"));
    expect(() => streamInputOf(file, { "target-path": "s3://bucket/lake" }, plain, { fallback: "continuous", fromContract: true })).toThrow(/targetPath: s3:\/\/bucket\/lake: the lake format duckdb writes/);
  });
});
