/**
 * Reading Delta tables back with delta-rs itself (the provisioned `deltalake` Python package), a
 * reader this project did not write: what a Spark, Polars or delta-rs user sees.
 */
import { execFileSync, spawn } from "node:child_process";
import { provisioned } from "./objectstores.js";

export function deltaPython(): string {
  return provisioned("provision-deltalake.sh", "run `bash scripts/provision-deltalake.sh` (installs deltalake and pyarrow from PyPI; needs python3 with venv)");
}

const READ = `
import json, os, sys
from deltalake import DeltaTable
dt = DeltaTable(sys.argv[1], storage_options=json.loads(sys.argv[2]) or None)
def exact(v):
    # JSON numbers lose integers beyond 2^53 in JavaScript: those travel as text.
    return {"$int": str(v)} if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53 else v
rows = [{k: exact(v) for k, v in r.items()} for r in dt.to_pyarrow_table().to_pylist()]
out = {"version": dt.version(), "rows": rows, "history": dt.history()}
print(json.dumps(out, default=str), flush=True)
# delta-rs's runtime threads can abort a normal interpreter exit ("terminate called…").
os._exit(0)
`;

export interface DeltaSnapshot {
  version: number;
  rows: Array<Record<string, unknown>>;
  history: Array<Record<string, unknown>>;
}

/** The table's current snapshot; integers parsed exactly (bigint beyond 2^53). */
export function readDelta(uri: string, env: NodeJS.ProcessEnv = {}, storage: Record<string, string> = {}): DeltaSnapshot {
  const out = execFileSync(deltaPython(), ["-c", READ, uri, JSON.stringify(storage)], {
    encoding: "utf8",
    env: { ...process.env, ...env },
    maxBuffer: 512 * 1024 * 1024,
  });
  return JSON.parse(out, (_k, v: unknown) =>
    v !== null && typeof v === "object" && typeof (v as { $int?: unknown }).$int === "string" ? BigInt((v as { $int: string }).$int) : v,
  ) as DeltaSnapshot;
}

/** The transaction version Delta records for `appId`, or null. */
export function deltaTxnVersion(uri: string, appId: string, env: NodeJS.ProcessEnv = {}): number | null {
  const out = execFileSync(
    deltaPython(),
    ["-c", "import sys, os, json; from deltalake import DeltaTable; print(json.dumps(DeltaTable(sys.argv[1]).transaction_version(sys.argv[2])), flush=True); os._exit(0)", uri, appId],
    { encoding: "utf8", env: { ...process.env, ...env } },
  );
  return JSON.parse(out) as number | null;
}

const WATCH = `
import json, os, sys, time
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError
uri, key, stop = sys.argv[1], sys.argv[2], sys.argv[3]
reads, dup_reads, versions = 0, 0, set()
while not os.path.exists(stop):
    try:
        dt = DeltaTable(uri)
    except TableNotFoundError:
        time.sleep(0.01)
        continue
    keys = dt.to_pyarrow_table(columns=[key]).column(key).to_pylist()
    reads += 1
    versions.add(dt.version())
    with open(stop + ".seen.tmp", "w") as f:
        f.write(str(dt.version()))
    os.replace(stop + ".seen.tmp", stop + ".seen")
    if len(set(keys)) != len(keys):
        dup_reads += 1
print(json.dumps({"reads": reads, "dupReads": dup_reads, "versions": len(versions)}), flush=True)
os._exit(0)
`;

/**
 * Reads the table with delta-rs again and again until `stopFile` exists (another program reading
 * while a stream writes): how many reads, how many saw a key twice, how many table versions they
 * saw. After each read it writes the version it read to `<stopFile>.seen`.
 */
export function watchDelta(uri: string, key: string, stopFile: string): { done: Promise<{ reads: number; dupReads: number; versions: number }> } {
  const child = spawn(deltaPython(), ["-c", WATCH, uri, key, stopFile], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  const done = new Promise<{ reads: number; dupReads: number; versions: number }>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(JSON.parse(out) as { reads: number; dupReads: number; versions: number }) : reject(new Error(`watcher exited ${code}: ${out}`))));
  });
  return { done };
}
