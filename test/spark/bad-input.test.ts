/**
 * SparkStreamSink and `lakelogic spark run` on bad input, against the provisioned Spark: options
 * refused by name when the sink is built; a master nothing answers at (refused before a JVM
 * starts) and one that accepts connections but is no Spark master (Spark's registration gives
 * up, the error names the master); JSON and Delta source paths that do not exist; each exits 2
 * from the CLI. And `quarantine.target`: the quarantine lands where the lake puts it.
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { parseContract } from "../../src/contract/index.js";
import { ConfigError } from "../../src/errors.js";
import { quarantineLocationIn, resolveLakeConfig } from "../../src/lake/config.js";
import { deltaTargets, SparkStartError, SparkStreamSink, type SparkStreamSinkOptions } from "../../src/spark/stream-sink.js";
import { requireSpark } from "../support/spark.js";
import { readDeltaFiles } from "./delta-files.js";
import { orderEvents, sparkOrdersContract } from "./events.js";

requireSpark();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ll-spark-bad-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

/** The lake of contractFile(name). */
const lakeOf = (name: string): string => join(dir, `${name}-lake`);

/** examples/orders.yaml on Delta in its own lake (lakeOf), with `extra` under `quarantine:`. */
async function contractFile(name: string, extra = ""): Promise<string> {
  const file = join(dir, `${name}.yaml`);
  const text = (await readFile("examples/orders.yaml", "utf8")).replace("format: duckdb", "format: delta").replace("target_path: ./lake", `target_path: ${lakeOf(name)}`);
  await writeFile(file, text.replace(/\nquarantine:\n( {2}.*\n)+/, `\nquarantine:\n  enabled: true\n${extra}`));
  return file;
}

/** The ConfigError `fn` throws. */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

const json = { type: "json", path: "in" } as const;

describe("SparkStreamSink options", () => {
  const sink = (options: unknown): SparkStreamSink => new SparkStreamSink(sparkOrdersContract(), options as SparkStreamSinkOptions);

  it("names a missing or malformed option and what it expects, when the sink is built", () => {
    const noCheckpoint = configError(() => sink({ source: json }));
    expect(noCheckpoint.option).toBe("checkpointLocation");
    expect(noCheckpoint.message).toMatch(/^checkpointLocation: expected the directory .* of Spark's checkpoint.*; got undefined$/);
    expect(configError(() => sink(undefined)).option).toBe("options");
    expect(configError(() => sink({ checkpointLocation: "c" })).message).toMatch(/^source: expected \{ type: "kafka" \| "json" \| "delta", … \}; got undefined/);
    expect(configError(() => sink({ source: { type: "parquet", path: "x" }, checkpointLocation: "c" })).message).toMatch(/^source\.type: expected one of "kafka", "json", "delta"; got "parquet"/);
    expect(configError(() => sink({ source: { type: "json" }, checkpointLocation: "c" })).option).toBe("source.path");
    expect(configError(() => sink({ source: { type: "kafka", bootstrapServers: [], topic: "t" }, checkpointLocation: "c" })).option).toBe("source.bootstrapServers");
    expect(configError(() => sink({ source: { type: "kafka", bootstrapServers: "k:9092" }, checkpointLocation: "c" })).option).toBe("source.topic");
    expect(configError(() => sink({ source: { type: "delta", path: "d", startingVersion: -1 }, checkpointLocation: "c" })).option).toBe("source.startingVersion");
    expect(configError(() => sink({ source: { type: "delta", path: "d", maxFilesPerTrigger: 0 }, checkpointLocation: "c" })).option).toBe("source.maxFilesPerTrigger");
    expect(configError(() => sink({ source: json, checkpointLocation: "" })).option).toBe("checkpointLocation");
    expect(configError(() => sink({ source: json, checkpointLocation: "c", trigger: "once" })).option).toBe("trigger");
    expect(configError(() => sink({ source: json, checkpointLocation: "c", trigger: { processingTime: "30s" } })).message).toMatch(/^trigger\.processingTime: expected an interval such as "30 seconds"/);
    expect(configError(() => sink({ source: json, checkpointLocation: "c", master: "spark:/host:7077" })).message).toMatch(/^master: expected a Spark master: .*; got "spark:\/host:7077"/);
    expect(configError(() => sink({ source: json, checkpointLocation: "c", conf: { "spark.executor.cores": 2 } })).option).toBe("conf.spark.executor.cores");
    expect(configError(() => sink({ source: json, checkpointLocation: "c", packages: ["delta-spark"] })).option).toBe("packages");
    // A misspelt or Python-spelt option is refused, not ignored.
    expect(configError(() => sink({ source: json, checkpoint_location: "c" })).message).toMatch(/^SparkStreamSink: checkpoint_location: unknown option; did you mean "checkpointLocation"\?/);
    expect(configError(() => sink({ source: { ...json, maxFilesPerTriger: 1 }, checkpointLocation: "c" })).message).toMatch(/did you mean "maxFilesPerTrigger"/);
    // What Spark takes is taken.
    for (const master of ["local", "local[4]", "local[*]", "local[2,3]", "yarn", "spark://a:7077,b:7077", "k8s://https://api:443"]) {
      expect(() => sink({ source: json, checkpointLocation: "c", master, trigger: { processingTime: "1 minute 30 seconds" } }), master).not.toThrow();
    }
  });

  it("a contract path and bad options: the options are refused at once, before the file is read", () => {
    expect(() => new SparkStreamSink(join(dir, "none.yaml"), { source: json } as unknown as SparkStreamSinkOptions)).toThrow(/^checkpointLocation: /);
  });
});

describe("an unreachable master", () => {
  it("nothing listening: refused before Spark starts, naming the master URL; the CLI exits 2", async () => {
    const master = "spark://127.0.0.1:1";
    const sink = new SparkStreamSink(sparkOrdersContract(), { source: json, checkpointLocation: join(dir, "c-refused"), targetPath: join(dir, "t"), master });
    const err = await sink.run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).option).toBe("master");
    expect((err as Error).message).toContain(`${master}: no Spark master answers there (127.0.0.1:1 ECONNREFUSED)`);

    const run = await cli("spark", "run", await contractFile("refused"), "--source", `json:${dir}`, "--checkpoint-location", join(dir, "c-refused"), "--master", master);
    expect(run).toMatchObject({ code: 2, stdout: "" });
    expect(run.stderr).toContain(`lakelogic spark: master: ${master}: no Spark master answers there`);
    const badUrl = await cli("spark", "run", await contractFile("bad-url"), "--source", `json:${dir}`, "--checkpoint-location", join(dir, "c"), "--master", "sparc://h:7077");
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toMatch(/master: expected a Spark master: .*; got "sparc:\/\/h:7077"/);
  }, 60_000);

  describe("a port that accepts connections but is no Spark master", () => {
    let server: Server;
    const sockets = new Set<Socket>();
    beforeAll(async () => {
      // Accepts and never answers: Spark's standalone client retries its registration, then gives up.
      server = createServer((s) => {
        sockets.add(s);
        s.on("error", () => undefined);
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    });
    afterAll(async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    });

    it("the CLI exits 2 once Spark gives up, with an error naming the master URL", async () => {
      const { port } = server.address() as { port: number };
      const master = `spark://127.0.0.1:${port}`;
      const run = await cli("spark", "run", await contractFile("silent"), "--source", `json:${dir}`, "--checkpoint-location", join(dir, "c-silent"), "--master", master);
      expect(run).toMatchObject({ code: 2, stdout: "" });
      expect(run.stderr).toContain(`lakelogic spark: the SparkSession did not start on master ${master}: `);
      expect(existsSync(join(dir, "c-silent"))).toBe(false);
    }, 600_000);

    it("the API rejects with a SparkStartError carrying the master", async () => {
      const { port } = server.address() as { port: number };
      const master = `spark://127.0.0.1:${port}`;
      // An existing source: the session's failure is what is reported, whenever Spark notices it.
      const sink = new SparkStreamSink(sparkOrdersContract(), { source: { type: "json", path: dir }, checkpointLocation: join(dir, "c-silent-api"), targetPath: join(dir, "t"), master });
      const err = await sink.run().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SparkStartError);
      expect(err).toMatchObject({ master, code: "SPARK_START", retriable: false });
    }, 600_000);
  });
});

describe("a source path that does not exist", () => {
  it("JSON files: the CLI exits 2 naming the path; nothing is written", async () => {
    const missing = join(dir, "no-such-input");
    const checkpoint = join(dir, "c-json");
    const run = await cli("spark", "run", await contractFile("json-missing"), "--source", `json:${missing}`, "--checkpoint-location", checkpoint);
    expect(run).toMatchObject({ code: 2, stdout: "" });
    expect(run.stderr).toContain(`lakelogic spark: source.path: json source "${missing}": no such file or directory`);
    expect(existsSync(lakeOf("json-missing"))).toBe(false);
    expect(existsSync(checkpoint)).toBe(false);
  }, 300_000);

  it("Delta: missing, or a directory that is no Delta table; a ConfigError on source.path, and exit 2", async () => {
    const missing = join(dir, "no-such-table");
    const sink = new SparkStreamSink(sparkOrdersContract(), { source: { type: "delta", path: missing }, checkpointLocation: join(dir, "c-delta"), targetPath: join(dir, "t") });
    const err = await sink.run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect(err).toMatchObject({ option: "source.path", detail: `delta source "${missing}" does not exist: expected the path of a Delta table` });

    const plain = join(dir, "plain-dir");
    await mkdir(plain, { recursive: true });
    const run = await cli("spark", "run", await contractFile("delta-plain"), "--source", `delta:${plain}`, "--checkpoint-location", join(dir, "c-delta-cli"));
    expect(run).toMatchObject({ code: 2, stdout: "" });
    expect(run.stderr).toContain(`lakelogic spark: source.path: delta source "${plain}" is not a Delta table (it has no _delta_log)`);
  }, 300_000);
});

describe("quarantine.target", () => {
  it("places the quarantine as the lake does: a name beside the table, a path holding <table>; without one <target>_quarantine", async () => {
    const lake = join(dir, "q-lake");
    const yaml = (q: string): string =>
      `dataset: orders\nprimary_key: [order_id]\nmodel:\n  fields:\n    - { name: order_id, type: long }\nmaterialization:\n  format: delta\n  target_path: ${lake}\n${q}`;
    for (const [q, expected] of [
      ["quarantine:\n  target: orders_rejects\n", join(lake, "orders_rejects")],
      [`quarantine:\n  target: ${join(dir, "rejects")}/\n`, join(dir, "rejects", "orders")],
      ["quarantine:\n  enabled: true\n", join(lake, "orders_quarantine")],
    ] as const) {
      const c = parseContract(yaml(q));
      expect(deltaTargets(c, {}).quarantine).toBe(expected);
      // The lake's writer (StreamSink, format delta) puts it in the same place.
      const config = resolveLakeConfig(c);
      expect(quarantineLocationIn(config.targetPath, config.table, config.quarantine.target)).toBe(resolve(expected));
    }
    const named = parseContract(yaml("quarantine:\n  target: orders_rejects\n"));
    expect(deltaTargets(named, { targetPath: join(dir, "elsewhere", "silver") }).quarantine).toBe(join(dir, "elsewhere", "orders_rejects"));
    expect(deltaTargets(parseContract(yaml("")), { targetPath: join(dir, "elsewhere", "silver") }).quarantine).toBe(join(dir, "elsewhere", "silver_quarantine"));
    expect(deltaTargets(named, { quarantinePath: join(dir, "q") }).quarantine).toBe(join(dir, "q"));
    expect(() => deltaTargets(parseContract(yaml("quarantine:\n  target: orders\n")), {})).toThrow(/^quarantine\.target: must differ from the table name "orders"/);
  });

  it("a run writes the quarantine to the contract's quarantine.target", async () => {
    const input = join(dir, "q-in");
    await mkdir(input, { recursive: true });
    const { values } = orderEvents(40, 3);
    await writeFile(join(input, "a.json"), values.join("\n") + "\n");
    const file = await contractFile("q", "  target: orders_rejects\n");
    const run = await cli("spark", "run", file, "--source", `json:${input}`, "--checkpoint-location", join(dir, "c-q"), "--json");
    expect(run.code).toBe(0);
    const summary = JSON.parse(run.stdout) as { badCount: number; quarantinePath: string };
    expect(summary.badCount).toBe(values.length / 5);
    expect(summary.quarantinePath).toBe(join(lakeOf("q"), "orders_rejects"));
    expect((await readDeltaFiles(summary.quarantinePath)).length).toBe(summary.badCount);
    expect(existsSync(join(lakeOf("q"), "orders_quarantine"))).toBe(false);
  }, 300_000);
});
