/** The `materialization` section (strategy, format, table, target, partitioning) and lake formats. */
import { didYouMean } from "../suggest.js";
import type { Contract, LakeFormat, Materialization, Strategy } from "../types.js";
import type { YamlPath } from "../yaml.js";
import type { NormaliseContext } from "./context.js";
import { asMap, asOptStr, asStrList, checkKeys, unknownChoice, type Obj } from "./read.js";

const MATERIALIZATION_KEYS = [
  "strategy", "target_path", "format", "partition_by", "table", "location", "cluster_by",
  "reprocess_policy", "reprocess_date_column", "scd2", "scd1", "fact", "soft_delete_column",
  "soft_delete_value", "soft_delete_time_column", "soft_delete_reason_column", "deletion",
  "table_properties", "compaction", "unknown_member", "merge_dedup_guard", "secondary_targets",
  "dlt_destination", "dlt_credentials", "dlt_dataset_name", "trigger",
];
const STRATEGIES: readonly Strategy[] = ["append", "merge", "overwrite", "scd2"];
const FORMATS: readonly LakeFormat[] = ["duckdb", "parquet", "delta", "ducklake"];

export function readMaterialization(cx: NormaliseContext, data: Obj, dataset: string, info: Contract["info"]): Materialization {
  const path: YamlPath = ["materialization"];
  const m = asMap(cx, data["materialization"], path) ?? {};
  checkKeys(cx, m, path, MATERIALIZATION_KEYS, "materialization");
  let strategy: Strategy = "append";
  const given = asOptStr(cx, m["strategy"], [...path, "strategy"]);
  if (given !== undefined) {
    const t = given.trim().toLowerCase();
    if ((STRATEGIES as readonly string[]).includes(t)) strategy = t as Strategy;
    else if (t === "upsert") {
      // The Python package treats upsert as a keyed write like merge: the same here, said once.
      strategy = "merge";
      cx.warn([...path, "strategy"], "strategy upsert runs as merge (insert new keys, replace existing ones)", "derived");
    } else cx.error([...path, "strategy"], unknownChoice("strategy", given, didYouMean(t, STRATEGIES)), "append, merge, overwrite or scd2");
  }
  const fmt = readFormat(cx, m["format"], [...path, "format"], "duckdb");
  const table =
    asOptStr(cx, m["table"], [...path, "table"]) ??
    (typeof info.tableName === "string" && info.tableName.trim() !== "" ? info.tableName.trim() : dataset);
  const out: Materialization = {
    strategy,
    strategyDeclared: given !== undefined,
    format: fmt.format,
    table,
    partitionBy: asStrList(cx, m["partition_by"], [...path, "partition_by"]) ?? [],
  };
  if (fmt.declared !== undefined) out.declaredFormat = fmt.declared;
  const target = asOptStr(cx, m["target_path"], [...path, "target_path"]) ?? asOptStr(cx, m["location"], [...path, "location"]);
  if (target !== undefined) out.targetPath = target;
  resolvePartitionColumns(cx, out.partitionBy, [...path, "partition_by"]);
  return out;
}

/** Spell partition columns as their fields are declared; an unknown one is suspicious, not fatal. */
function resolvePartitionColumns(cx: NormaliseContext, partitionBy: string[], path: YamlPath): void {
  partitionBy.forEach((p, i) => {
    if (cx.fieldNames.length === 0) return;
    const hit = cx.declaredField(p);
    if (hit !== undefined) partitionBy[i] = hit;
    else {
      const guess = didYouMean(p, cx.fieldNames);
      cx.warn(path, `partition column '${p}' is not a field of this contract${guess !== undefined ? ` (did you mean ${guess}?)` : ""}`, "suspicious");
    }
  });
}

/** A lake format; the original's other formats load (with a warning) so one contract serves both. */
export function readFormat(cx: NormaliseContext, v: unknown, path: YamlPath, fallback: LakeFormat): { format: LakeFormat; declared?: string } {
  const s = asOptStr(cx, v, path, "duckdb, parquet, delta or ducklake");
  if (s === undefined) return { format: fallback };
  const t = s.trim().toLowerCase();
  if ((FORMATS as readonly string[]).includes(t)) return { format: t as LakeFormat };
  const guess = didYouMean(t, FORMATS);
  if (guess !== undefined) {
    cx.error(path, `unknown format '${s}' (did you mean ${guess}?)`, "duckdb, parquet, delta or ducklake");
    return { format: fallback };
  }
  // Other formats of the original (iceberg, csv…) load, so the contract stays shared; no engine here writes them.
  cx.warn(path, `format '${s}' is written by no engine here (duckdb, parquet, delta, ducklake): a run refuses it`, "unsupported");
  return { format: fallback, declared: s };
}
