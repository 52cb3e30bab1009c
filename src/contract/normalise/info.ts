/** The `info` block and the dataset name (declared, or derived from info.title or the file name). */
import { basename, extname } from "node:path";
import { didYouMean } from "../suggest.js";
import type { Contract } from "../types.js";
import type { NormaliseContext } from "./context.js";
import { asMap, asOptStr, checkKeys, missing, type Obj } from "./read.js";

function isBlank(v: unknown): boolean {
  return typeof v === "string" && v.trim() === "";
}

const INFO_KEYS = [
  "title", "table_name", "version", "description", "owner", "contact", "target_layer", "status",
  "classification", "domain", "system",
];
/** `tableName` is read as `table_name` (both become `info.tableName`), so it is no misspelling. */
const INFO_SPELLINGS = [...INFO_KEYS, ...INFO_KEYS.map(camel)];
/** Info keys whose value is text (a YAML number such as `version: 2` is read as written). */
const INFO_TEXT_KEYS = ["title", "owner", "domain", "system", "target_layer", "table_name", "status", "classification", "version"];

function camel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function slug(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, "_")
    .replace(/^_+|_+$/g, "");
}

export function readInfo(cx: NormaliseContext, data: Obj): Contract["info"] {
  const info: Contract["info"] = {};
  const m = asMap(cx, data["info"], ["info"]);
  if (m) {
    checkKeys(cx, m, ["info"], INFO_SPELLINGS, "info", true);
    for (const [key, value] of Object.entries(m)) {
      if (INFO_TEXT_KEYS.includes(key)) {
        const s = asOptStr(cx, value, ["info", key]);
        if (s !== undefined) info[camel(key)] = s;
      } else {
        info[camel(key)] = value;
      }
    }
  }
  // The original also reads the layer from a top-level `tier` / `layer` / `target_layer`.
  if (info.targetLayer === undefined) {
    for (const key of ["target_layer", "tier", "layer"]) {
      const s = asOptStr(cx, data[key], [key]);
      if (s !== undefined) {
        info.targetLayer = s;
        break;
      }
    }
  }
  return info;
}

export function readDataset(cx: NormaliseContext, data: Obj, info: Contract["info"]): string {
  const given = asOptStr(cx, data["dataset"], ["dataset"]);
  if (given !== undefined) return given;
  if (data["dataset"] !== undefined && data["dataset"] !== null && !isBlank(data["dataset"])) return "invalid";
  // A misspelt `dataset:` must not silently fall back to a derived name (a different table and checkpoint).
  if (Object.keys(data).some((k) => k !== "dataset" && didYouMean(k, ["dataset"]) === "dataset")) {
    missing(cx, data, [], "dataset", "a dataset name (it names the table and the checkpoint key)");
    return "invalid";
  }
  // The original names streams by dataset, then info.title; then we fall back to the file name.
  const fromTitle = typeof info.title === "string" ? slug(info.title) : "";
  const fromFile = cx.file !== undefined ? slug(basename(cx.file, extname(cx.file))) : "";
  const derived = fromTitle || fromFile;
  if (derived === "") {
    missing(cx, data, [], "dataset", "a dataset name (it names the table and the checkpoint key), or an info.title to derive it from");
    return "invalid";
  }
  const from = fromTitle ? "info.title" : "the file name";
  cx.warn(
    [],
    `dataset is not set; using '${derived}' from ${from}. The table name and the checkpoint key derive from it: set dataset to keep them stable`,
    "derived",
  );
  return derived;
}
