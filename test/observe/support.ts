import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { join, resolve } from "node:path";
import { provisioned } from "../support/objectstores.js";

export const REPO = resolve(".");
export const BIN = join(REPO, "bin", "lakelogic.js");
export const ORDERS_CONTRACT = join(REPO, "examples", "orders.yaml");

/** A `lakelogic` child process whose output is collected as it comes. */
export interface CliChild {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once `test(stderr)` holds (checked on every chunk); rejects if the child exits first. */
  waitForStderr<T>(test: (stderr: string) => T | undefined): Promise<T>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnCli(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): CliChild {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let out = "";
  let err = "";
  const waiters: Array<() => void> = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.on("close", (code, signal) => {
      done({ code, signal });
      for (const w of waiters.splice(0)) w();
    }),
  );
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => {
    err += d.toString();
    for (const w of waiters.splice(0)) w();
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForStderr<T>(test: (stderr: string) => T | undefined): Promise<T> {
      return new Promise<T>((done, fail) => {
        const check = () => {
          let got: T | undefined;
          try {
            got = test(err);
          } catch (error) {
            return fail(error instanceof Error ? error : new Error(String(error)));
          }
          if (got !== undefined) return done(got);
          if (child.exitCode !== null || child.signalCode !== null) return fail(new Error(`lakelogic exited (${child.exitCode ?? child.signalCode}) before: ${err.slice(-2000)}`));
          waiters.push(check);
        };
        check();
      });
    },
  };
}

/** JSON log lines of a stderr (every line must be one). */
export function jsonLines(stderr: string): Array<{ time: string; level: string; msg: string; fields: Record<string, unknown> }> {
  return stderr
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as { time: string; level: string; msg: string; fields: Record<string, unknown> });
}

export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
export interface PromFamily {
  name: string;
  type: string;
  samples: PromSample[];
}

const PARSE = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": f.name, "type": f.type, "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]})
print(json.dumps(out))
`;

let python: string | undefined;

/** Parse Prometheus exposition text with the Prometheus Python client's own parser. */
export function parsePrometheus(text: string): PromFamily[] {
  python ??= provisioned(
    "provision-prometheus-parser.sh",
    "run `bash scripts/provision-prometheus-parser.sh` (installs prometheus_client from PyPI; needs python3 with venv)",
  );
  return JSON.parse(execFileSync(python, ["-c", PARSE], { input: text, encoding: "utf8" })) as PromFamily[];
}

/** The value of one sample (0 when absent). */
export function sampleValue(families: PromFamily[], name: string, labels: Record<string, string> = {}): number {
  for (const f of families) {
    for (const s of f.samples) {
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
    }
  }
  return 0;
}
