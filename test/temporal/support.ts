import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { History } from "@temporalio/common/lib/proto-utils.js";
import { historyToJSON } from "@temporalio/common/lib/proto-utils.js";
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from "@temporalio/worker";
import { orderEvent } from "../../examples/orders.js";
import { workflowsPath } from "../../src/temporal/worker.js";
import type { BatchRuntime, FetchBatchResult, WriteBatchResult, WriteBatchesInput } from "../../workflows/types.js";

export const ORDERS_CONTRACT = fileURLToPath(new URL("../../examples/orders.yaml", import.meta.url));

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;
/** Bundle the workflow code once per test file (1.5–2.5 s). */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath: workflowsPath(), logger: quietLogger });
  return bundle;
}

const noop = () => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

let bundleFile: Promise<string> | undefined;
/** The workflow bundle as a file, for worker processes (written once per test file). */
export function workflowBundleFile(): Promise<string> {
  bundleFile ??= workflowBundle().then(({ code }) => {
    const path = join(mkdtempSync(join(tmpdir(), "ll-bundle-")), "workflows.js");
    writeFileSync(path, code);
    return path;
  });
  return bundleFile;
}

/** Write order events [from, to) as JSON lines; bad ones are generated bad (see examples/orders.ts). */
export function writeOrders(path: string, from: number, to: number, append = false): void {
  const lines: string[] = [];
  for (let i = from; i < to; i++) lines.push(JSON.stringify(orderEvent(i)));
  const text = lines.length ? lines.join("\n") + "\n" : "";
  if (append) appendFileSync(path, text);
  else writeFileSync(path, text);
}

/**
 * Write and commit the first batch of a fetch after `at`, as the workflow does for a fetch that
 * handed over one batch: writeBatches with that batch alone (whose failure fails the call).
 */
export async function writeFetched(
  runtime: Pick<BatchRuntime, "writeBatches">,
  at: Pick<WriteBatchesInput, "spec" | "key" | "writerId" | "previous">,
  fetched: Pick<FetchBatchResult, "spool" | "cursor">,
): Promise<WriteBatchResult> {
  const { written } = await runtime.writeBatches({ ...at, batches: [{ fetched: fetched.spool, cursor: fetched.cursor }], ack: false });
  return written[0]!;
}

export interface WorkerMachine {
  /**
   * Run the worker as a machine of its own: in a private mount namespace (`unshare -m`, root
   * only) with an empty tmpfs over this directory, so what it writes there no other worker sees,
   * while loopback (Temporal, Kafka, S3) is shared.
   */
  privateDisk: string;
  env?: NodeJS.ProcessEnv;
}

/** A worker in its own process; resolves once it polls. */
export async function spawnWorker(address: string, taskQueue = "lakelogic", machine?: WorkerMachine): Promise<ChildProcess> {
  const script = fileURLToPath(new URL("./worker-child.ts", import.meta.url));
  const bundlePath = await workflowBundleFile();
  const node = [process.execPath, "--import", import.meta.resolve("tsx"), script, address, taskQueue, bundlePath];
  // `exec` keeps the worker's pid the child's, so a SIGKILL reaches the worker itself.
  const command = machine
    ? ["unshare", ["-m", "--propagation", "private", "sh", "-c", 'mount -t tmpfs none "$0" && exec "$@"', machine.privateDisk, ...node]]
    : [node[0]!, node.slice(1)];
  return new Promise((resolve, reject) => {
    const child = spawn(command[0] as string, command[1] as string[], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...machine?.env },
    });
    let out = "";
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes("ready ")) resolve(child);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    // Set LAKELOGIC_TEST_WORKER_LOG=<file> to keep every worker's output when debugging.
    const log = process.env.LAKELOGIC_TEST_WORKER_LOG;
    if (log) {
      child.stdout.on("data", (d: Buffer) => appendFileSync(log, d));
      child.stderr.on("data", (d: Buffer) => appendFileSync(log, d));
    }
    child.once("exit", (code, signal) => reject(new Error(`worker exited early (${code ?? signal}): ${out.slice(-2000)}`)));
    child.once("error", reject);
  });
}

/** `<pid>@<host>`: how the SDK names a worker (its identity, its sticky task queue). */
const WORKER_NAME = /^\d+@\S+$/;

/**
 * A history as JSON to keep under test/fixtures/histories: without what names the recording
 * machine — stack traces (source paths), worker identities and sticky queues (host names), and,
 * in payloads, `scratchDir` (written as "."). Replay reads none of them as anything but data.
 */
export function recordableHistory(history: History, scratchDir?: string): string {
  const local = (data: string) =>
    scratchDir === undefined ? data : Buffer.from(Buffer.from(data, "base64").toString("utf8").split(scratchDir).join("."), "utf8").toString("base64");
  const scrub = (k: string, v: unknown) => {
    if (k === "stackTrace") return "";
    if (k === "identity" || (typeof v === "string" && WORKER_NAME.test(v))) return "recorder";
    return k === "data" && typeof v === "string" ? local(v) : v;
  };
  return JSON.stringify(JSON.parse(historyToJSON(history), scrub), null, 1) + "\n";
}
