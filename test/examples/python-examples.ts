/**
 * The Python package's example contracts (its sdist, `lakelogic` 1.84.0, provisioned by
 * scripts/provision-python-examples.sh): where they are, the placeholder values a user gives them,
 * a small input made from a contract's declared fields, and Delta tables counted by delta-rs.
 * Shared by the `lakelogic run` and `lakelogic start` tests of those contracts.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { parse } from "yaml";
import type { Contract, FieldSpec } from "../../src/contract/types.js";
import { deltaPython } from "../support/delta.js";
import { provisioned } from "../support/objectstores.js";

/** The extracted sdist's root (its examples/ hold the contracts). */
export const SDIST = provisioned("provision-python-examples.sh", "run `bash scripts/provision-python-examples.sh` (downloads the lakelogic sdist from PyPI; needs python3 with pip)");

/** Placeholders the examples leave to the user (their notebooks write them into environments.dev). */
export function varsFor(root: string): Record<string, string> {
  return {
    data_root: join(root, "data"),
    storage_root: join(root, "storage"),
    quarantine_root: join(root, "quarantine"),
    catalog: "local",
    bronze_path: join(root, "bronze"),
    silver_path: join(root, "silver"),
    gold_path: join(root, "gold"),
  };
}

export function walk(dir: string, out: string[] = [], ending = /\.ya?ml$/): string[] {
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) walk(p, out, ending);
    else if (ending.test(e)) out.push(p);
  }
  return out;
}

/** A contract: a mapping with model/fields or a dataset, not a registry file (`_system.yaml`, `_domain.yaml`). */
export function isContract(file: string): boolean {
  if (file.split("/").pop()!.startsWith("_")) return false;
  let data: unknown;
  try {
    data = parse(readFileSync(file, "utf8"), { logLevel: "silent" });
  } catch {
    return false;
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) return false;
  const o = data as Record<string, unknown>;
  return (typeof o["model"] === "object" && o["model"] !== null) || "dataset" in o;
}

export function declaredFormat(file: string): string | undefined {
  const o = parse(readFileSync(file, "utf8"), { logLevel: "silent" }) as { materialization?: { format?: unknown } };
  return typeof o.materialization?.format === "string" ? o.materialization.format : undefined;
}

export function valueOf(f: FieldSpec, i: number): unknown {
  if (f.acceptedValues?.length) return f.acceptedValues[i % f.acceptedValues.length];
  const lo = typeof f.min === "number" ? f.min : undefined;
  switch (f.type) {
    case "integer":
      return (lo ?? 1) + i;
    case "double":
    case "decimal":
      return (lo ?? 1) + i + 0.5;
    case "boolean":
      return i % 2 === 0;
    case "date":
      return `2024-01-0${i + 1}`;
    case "timestamp":
      return `2024-01-0${i + 1}T10:00:00Z`;
    case "json":
      return { n: i };
    case "string":
      if (/email/i.test(f.name)) return `user${i}@example.com`;
      return `${f.name}-${i}`.slice(0, f.maxLength ?? 64);
  }
}

export function records(c: Contract): { lines: string; good: number; bad: number } {
  const rows: Array<Record<string, unknown>> = [];
  for (let i = 0; i < 3; i++) rows.push(Object.fromEntries(c.fields.map((f) => [f.name, valueOf(f, i)])));
  const required = c.fields.find((f) => f.required);
  if (required) {
    const broken = Object.fromEntries(c.fields.map((f) => [f.name, valueOf(f, 3)]));
    delete broken[required.name];
    rows.push(broken);
  }
  return { lines: rows.map((r) => JSON.stringify(r)).join("\n") + "\n", good: 3, bad: required ? 1 : 0 };
}

const COUNT = `
import json, os, sys
from deltalake import DeltaTable
out = {}
for uri in sys.argv[1:]:
    try:
        out[uri] = len(DeltaTable(uri).to_pyarrow_table().to_pylist())
    except Exception as e:
        out[uri] = str(e)
print(json.dumps(out), flush=True)
os._exit(0)
`;

/** Row counts of many Delta tables, read by delta-rs in one process. */
export function countDelta(uris: string[]): Record<string, number | string> {
  return JSON.parse(execFileSync(deltaPython(), ["-c", COUNT, ...uris], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })) as Record<string, number | string>;
}

/** Every Delta table (a directory holding _delta_log) under `dir`. */
export function deltaTables(dir: string, out: string[] = []): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  if (entries.includes("_delta_log")) {
    out.push(dir);
    return out;
  }
  for (const e of entries) if (statSync(join(dir, e)).isDirectory()) deltaTables(join(dir, e), out);
  return out;
}

