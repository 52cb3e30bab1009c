/**
 * The published package, as a user gets it: `npm pack` (its prepack builds dist/), then a new
 * project installs the tarball with only the real dependencies (no optional peers) and uses the
 * CLI, the three entry points, and the type declarations under a strict `tsc`.
 *
 * The pack runs in a copy of the package's sources (node_modules linked), so this working tree's
 * dist/ is never written: bin/lakelogic.js prefers a build over the sources.
 */
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const TSC = join(REPO, "node_modules", "typescript", "bin", "tsc");
const TEMPORAL_PEERS = ["@temporalio/client", "@temporalio/worker", "@temporalio/workflow", "@temporalio/activity"];
// A busy two-core machine: the build and the install take a while.
const INSTALL_TIMEOUT_MS = 10 * 60_000;
const STEP_TIMEOUT_MS = 5 * 60_000;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run a command to completion; the outcome, never a throw (the assertions say what failed). */
function run(cmd: string, args: string[], cwd: string): Promise<Ran> {
  // npm's own script variables would describe the project running the tests, not `cwd`.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_(package|lifecycle)_/.test(k) && k !== "INIT_CWD"));
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

function ok(r: Ran, what: string): Ran {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-4000)}`);
  return r;
}

const CONTRACT = `version: "1.0"
info:
  title: Items
  owner: data-platform
dataset: items
primary_key: [id]
model:
  fields:
    - { name: id, type: long, required: true }
    - { name: name, type: string, required: true }
quality:
  row_rules:
    - range: { field: id, min: 0, inclusive: true }
materialization:
  strategy: merge
  format: duckdb
  target_path: ./lake
quarantine:
  enabled: true
  include_error_reason: true
trigger: available_now
`;

/** The two entry points that need no optional peer, and a tiny StreamSink run into a temp lake. */
const RUN_SCRIPT = `import { existsSync } from "node:fs";
import { join } from "node:path";
import { IterableSource, StreamSink, loadContract, readQuarantine, readTable } from "lakelogic";
import * as connectors from "lakelogic/connectors";

const lake = process.argv[2];
const rows = [{ id: 1, name: "one" }, { id: 2, name: "two" }, { id: -3, name: "negative" }];
const summary = await new StreamSink("items.yaml", new IterableSource(rows), { targetPath: lake }).run("available_now");
const contract = await loadContract("items.yaml");
const good = await readTable(contract, { targetPath: lake });
const bad = await readQuarantine(contract, { targetPath: lake });
process.stdout.write(JSON.stringify({
  sourceCount: summary.sourceCount,
  goodCount: summary.goodCount,
  badCount: summary.badCount,
  stoppedBy: summary.stoppedBy,
  tableIds: good.map((r) => Number(r.id)).sort(),
  quarantined: bad.length,
  sqliteCheckpoint: existsSync(join(lake, "_lakelogic", "checkpoints.sqlite")),
  connectors: Object.keys(connectors),
}));
`;

const TEMPORAL_SCRIPT = `import { existsSync } from "node:fs";
try {
  const t = await import("lakelogic/temporal");
  process.stdout.write(JSON.stringify({ ok: true, exports: Object.keys(t), workflowsPathExists: existsSync(t.workflowsPath()) }));
} catch (err) {
  process.stdout.write(JSON.stringify({ ok: false, name: err?.name, code: err?.code, message: String(err?.message ?? err) }));
}
`;

/** A consumer's use of the public types; strict, with the libraries' declarations checked too. */
const CONSUMER_TS = `import { IterableSource, MissingDependencyError, StreamSink, type StreamRunSummary } from "lakelogic";
import * as connectors from "lakelogic/connectors";
import type { ServiceBusReceiverLike } from "lakelogic/connectors";

const rows: Array<{ id: number; name: string }> = [{ id: 1, name: "one" }];
const sink = new StreamSink("items.yaml", new IterableSource(rows), { targetPath: "lake" });
export const summary: () => Promise<StreamRunSummary> = () => sink.run("available_now");
export const receiver: ServiceBusReceiverLike | undefined = undefined;
export { connectors, MissingDependencyError };
`;

const CONSUMER_TSCONFIG = {
  compilerOptions: { strict: true, module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", skipLibCheck: false, noEmit: true, types: ["node"] },
  files: ["main.ts"],
};

const root = mkdtempSync(join(tmpdir(), "ll-pack-"));
const consumer = join(root, "consumer");
let packed: { filename: string; files: Array<{ path: string }> };

afterAll(() => rmSync(root, { recursive: true, force: true }));

beforeAll(async () => {
  // The package's sources, copied: what package.json ships plus what the build reads.
  const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { files: string[] };
  const src = join(root, "src-copy");
  const copy = new Set(["package.json", "README.md", "LICENSE", "tsconfig.json", "tsconfig.build.json", "src", "workflows", "activities", ...pkg.files]);
  copy.delete("dist");
  for (const entry of copy) if (existsSync(join(REPO, entry))) cpSync(join(REPO, entry), join(src, entry), { recursive: true });
  symlinkSync(join(REPO, "node_modules"), join(src, "node_modules"), "dir");
  const out = ok(await run("npm", ["pack", "--json", "--pack-destination", root], src), "npm pack");
  packed = (JSON.parse(out.stdout.slice(out.stdout.indexOf("["))) as Array<typeof packed>)[0]!;

  mkdirSync(consumer);
  const manifest = { name: "lakelogic-consumer", version: "0.0.0", private: true, type: "module" };
  writeFileSync(join(consumer, "package.json"), JSON.stringify(manifest, null, 2));
  // @types/node at the version this project uses: a TypeScript consumer on Node has it.
  const typesNode = (JSON.parse(readFileSync(join(REPO, "node_modules", "@types", "node", "package.json"), "utf8")) as { version: string }).version;
  // Install scripts off: better-sqlite3's would compile its native binding for minutes, which
  // proves nothing about this package. Its binding is taken from this project's copy instead —
  // the same version for the same Node, checked — as a user's allowed install script builds it
  // (README, "allowScripts").
  const args = ["install", "--no-audit", "--no-fund", "--prefer-offline", "--ignore-scripts", join(root, packed.filename), `@types/node@${typesNode}`];
  ok(await run("npm", args, consumer), "npm install of the tarball");
  const version = (dir: string) => (JSON.parse(readFileSync(join(dir, "node_modules", "better-sqlite3", "package.json"), "utf8")) as { version: string }).version;
  if (version(consumer) !== version(REPO)) throw new Error(`better-sqlite3 ${version(consumer)} in the consumer, ${version(REPO)} here: no binding to reuse`);
  const binding = join("node_modules", "better-sqlite3", "build", "Release", "better_sqlite3.node");
  mkdirSync(dirname(join(consumer, binding)), { recursive: true });
  cpSync(join(REPO, binding), join(consumer, binding));
  writeFileSync(join(consumer, "items.yaml"), CONTRACT);
  writeFileSync(join(consumer, "run.mjs"), RUN_SCRIPT);
  writeFileSync(join(consumer, "temporal.mjs"), TEMPORAL_SCRIPT);
  writeFileSync(join(consumer, "main.ts"), CONSUMER_TS);
  writeFileSync(join(consumer, "tsconfig.json"), JSON.stringify(CONSUMER_TSCONFIG, null, 2));
}, INSTALL_TIMEOUT_MS);

describe("npm pack", () => {
  it("ships the build, the CLI and the licence, no sources, and maps that carry their sources", () => {
    const paths = packed.files.map((f) => f.path);
    for (const p of ["LICENSE", "README.md", "bin/lakelogic.js", "dist/src/index.js", "dist/src/index.d.ts", "dist/src/sources/connectors.js", "dist/src/temporal/index.js", "dist/workflows/index.js"]) {
      expect(paths).toContain(p);
    }
    expect(paths.filter((p) => /^(src|test|bench|scripts|examples)\//.test(p) || (p.endsWith(".ts") && !p.endsWith(".d.ts")))).toEqual([]);
    const installed = join(consumer, "node_modules", "lakelogic");
    const maps = paths.filter((p) => p.endsWith(".map"));
    expect(maps.length).toBeGreaterThan(0);
    const withoutSources = maps.filter((p) => {
      const map = JSON.parse(readFileSync(join(installed, p), "utf8")) as { sources: string[]; sourcesContent?: Array<string | null> };
      return map.sourcesContent?.length !== map.sources.length || map.sourcesContent.some((s) => typeof s !== "string");
    });
    expect(withoutSources).toEqual([]);
    expect(readFileSync(join(installed, "LICENSE"), "utf8")).toContain("Apache License");
  });

  it("installs without any optional peer (unless a real dependency needs it)", () => {
    const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { peerDependencies: Record<string, string> };
    const lock = JSON.parse(readFileSync(join(consumer, "package-lock.json"), "utf8")) as { packages: Record<string, { dependencies?: Record<string, string> }> };
    const neededByDeps = new Set(
      Object.entries(lock.packages)
        .filter(([path]) => path !== "" && path !== "node_modules/lakelogic")
        .flatMap(([, entry]) => Object.keys(entry.dependencies ?? {})),
    );
    const installed = Object.keys(pkg.peerDependencies).filter((name) => existsSync(join(consumer, "node_modules", name)) && !neededByDeps.has(name));
    expect(installed).toEqual([]);
    for (const sdk of ["kafkajs", "@azure/service-bus", "@google-cloud/pubsub", "@temporalio/client"]) expect(existsSync(join(consumer, "node_modules", sdk))).toBe(false);
  });
});

describe("the installed package", () => {
  it("runs the lakelogic command: --help and lint", async () => {
    const help = ok(await run("npx", ["--no", "--", "lakelogic", "--help"], consumer), "lakelogic --help");
    expect(help.stdout).toContain("Usage: lakelogic");
    const lint = ok(await run("npx", ["--no", "--", "lakelogic", "lint", "items.yaml"], consumer), "lakelogic lint");
    expect(lint.stdout).toContain("No problems found");
  }, STEP_TIMEOUT_MS);

  it("imports lakelogic and lakelogic/connectors and runs a StreamSink into a lake", async () => {
    const lake = join(root, "lake");
    const out = ok(await run("node", ["run.mjs", lake], consumer), "node run.mjs");
    const got = JSON.parse(out.stdout) as Record<string, unknown>;
    expect(got).toMatchObject({ sourceCount: 3, goodCount: 2, badCount: 1, stoppedBy: "end", tableIds: [1, 2], quarantined: 1, sqliteCheckpoint: true });
    expect(got.connectors).toEqual(expect.arrayContaining(["ServiceBusConnector", "PubSubConnector", "EventGridConnector", "SQSConnector"]));
  }, STEP_TIMEOUT_MS);

  it("type-checks a consumer under strict tsc, library declarations included, without the optional peers", async () => {
    const r = await run("node", [TSC, "-p", "tsconfig.json"], consumer);
    expect(r.stdout + r.stderr).toBe("");
    expect(r.code).toBe(0);
  }, STEP_TIMEOUT_MS);

  it("lakelogic/temporal without the @temporalio packages fails naming them", async () => {
    const got = JSON.parse(ok(await run("node", ["temporal.mjs"], consumer), "node temporal.mjs").stdout) as Record<string, string>;
    expect(got).toMatchObject({ ok: false, code: "MISSING_DEPENDENCY" });
    for (const name of TEMPORAL_PEERS) expect(got.message).toContain(name);
    expect(got.message).toContain("npm install @temporalio/");
  }, STEP_TIMEOUT_MS);

  it("lakelogic/temporal with the @temporalio packages loads the runtime and finds the shipped workflows", async () => {
    // This project's installed copies, linked in (they resolve their own dependencies from here).
    mkdirSync(join(consumer, "node_modules", "@temporalio"), { recursive: true });
    for (const name of TEMPORAL_PEERS) symlinkSync(join(REPO, "node_modules", name), join(consumer, "node_modules", name), "dir");
    const got = JSON.parse(ok(await run("node", ["temporal.mjs"], consumer), "node temporal.mjs").stdout) as Record<string, unknown>;
    expect(got).toMatchObject({ ok: true, workflowsPathExists: true });
    expect(got.exports).toEqual(expect.arrayContaining(["StreamClient", "createLakeLogicWorker", "workflowsPath"]));
  }, STEP_TIMEOUT_MS);
});
