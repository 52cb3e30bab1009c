import { basename, join, resolve } from "node:path";
import type { Contract, FieldSpec, LakeFormat, Strategy } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import { redactText, redactUrl } from "../util/redact.js";

export const DEFAULT_TARGET_PATH = "./lake";
/** The DuckDB database file inside the target directory. */
export const DUCKDB_FILE = "lakelogic.duckdb";
/** Checkpoints committed with the data (`checkpoint: "target"`), in the same database. */
export const CHECKPOINT_TABLE = "_lakelogic_checkpoints";
/** Column holding the whole record when the contract declares no fields. */
export const RECORD_COLUMN = "record";
/** Column holding fields the contract does not declare, under `schema_policy.unknown_fields: allow`. */
export const EXTRA_COLUMN = "_extra";

/** Everything a writer needs, checked once at open. */
export interface LakeConfig {
  format: LakeFormat;
  strategy: Exclude<Strategy, "scd2">;
  /** Absolute path of the lake directory. */
  targetPath: string;
  table: string;
  primaryKey: string[];
  /** Declared fields; empty = schemaless (see docs/lake.md). */
  fields: FieldSpec[];
  schemaless: boolean;
  /** Keep undeclared keys in `_extra` (fields declared and unknown_fields: allow). */
  keepExtra: boolean;
  /** `schema_policy.evolution`; `strict` refuses fields added or removed against an existing table. */
  evolution: string;
  /**
   * `target` as written. `dir` is set when the target is a path (it contains a `/` or `\\`, as
   * the original reads it): the absolute directory holding this table's quarantine files,
   * `<target>/<table>` (or `<target>` itself when its last segment is the table's name). Those
   * files are Parquet on both lakes (docs/lake.md, "Quarantine under a path").
   */
  quarantine: { enabled: boolean; target: string; includeErrorReason: boolean; dir?: string };
  /** format ducklake: the catalog to attach, where data files go, and the table's schema. */
  ducklake?: DuckLakeLocation;
}

/** Where a DuckLake lives (ducklake-catalog.ts attaches it). */
export interface DuckLakeLocation {
  /**
   * The catalog as DuckLake's ATTACH takes it after `ducklake:`: `postgres:<libpq parameters>`
   * (several writers, several machines) or the absolute path of a DuckDB catalog file (one process).
   */
  catalog: string;
  /** Where the data files go: an absolute directory or an object-store URI, ending in `/`. */
  dataPath: string;
  /** The schema of the table inside the catalog (`main` unless a `table:` target names one). */
  schema: string;
}

/** Where a DuckLake is, for messages and logs: its catalog and data path without secrets. */
export function duckLakeWhere(location: DuckLakeLocation): string {
  return `${redactText(location.catalog)} (data ${redactText(location.dataPath)})`;
}

/** A lake target as a log line names it: format, table, and where it is (no credentials). */
export function describeTarget(config: LakeConfig): { format: LakeFormat; table: string; location: string } {
  const location = config.ducklake ? duckLakeWhere(config.ducklake) : redactText(config.targetPath);
  return { format: config.format, table: config.table, location };
}

/** A quarantine target that names a directory rather than a table beside the data. */
export function isQuarantinePath(target: string): boolean {
  return /[/\\]/.test(target);
}

/** The directory of a path quarantine target for `table` (see LakeConfig.quarantine.dir). */
export function quarantinePathDir(target: string, table: string): string {
  const dir = resolve(target.replace(/^table:/, ""));
  return basename(dir) === table ? dir : join(dir, table);
}

/** The formats this runtime's lake writes. */
export const LAKE_FORMATS: readonly string[] = ["duckdb", "parquet", "delta", "ducklake"];
/**
 * Formats whose tables can live where every machine reaches them (object storage; DuckLake with
 * a PostgreSQL catalog), with each batch committed inside the table together with the stream's
 * checkpoint: `checkpoint: "target"` is their default.
 */
export const SHARED_FORMATS: readonly string[] = ["delta", "ducklake"];
/** The URI schemes a DuckLake's data files may live under (DuckDB's httpfs). */
export const DUCKLAKE_DATA_SCHEMES: readonly string[] = ["s3", "s3a", "gs", "gcs", "r2"];
/** The DuckDB catalog file of a DuckLake whose catalog is not named (one process at a time). */
export const DUCKLAKE_CATALOG_FILE = "lakelogic.ducklake";
/** The URI schemes a delta lake may live under (delta-rs's object stores). */
export const DELTA_SCHEMES: readonly string[] = ["s3", "s3a", "gs", "az", "abfs", "abfss", "file"];
const FORMATS = LAKE_FORMATS;
const STRATEGIES: readonly string[] = ["append", "merge", "overwrite", "scd2"];
const FIELD_TYPES: readonly string[] = ["string", "integer", "double", "decimal", "boolean", "date", "timestamp", "json"];

/** Validate the contract's materialization and quarantine settings, up front and with names. */
export function resolveLakeConfig(contract: Contract, options: { targetPath?: string } = {}): LakeConfig {
  const m = contract.materialization;
  if (m.declaredFormat !== undefined) {
    // The loader kept a fallback format; writing it would put the rows somewhere the contract does not say.
    throw new ConfigError(
      "materialization.format",
      `"${m.declaredFormat}" is not a format this runtime's engines write (${LAKE_FORMATS.join(", ")}): the rows would land in ` +
        `another format than the contract declares, where its readers would not look. Write materialization.format: ` +
        `${LAKE_FORMATS.join(", ")} for this runtime, and keep the ${m.declaredFormat} contract for an engine that writes it`,
    );
  }
  const format = String(m.format ?? "duckdb");
  if (!FORMATS.includes(format)) {
    throw new ConfigError("materialization.format", `unknown format "${format}"; expected one of ${FORMATS.join(", ")}`);
  }
  const strategy = String(m.strategy ?? "append");
  if (!STRATEGIES.includes(strategy)) {
    throw new ConfigError(
      "materialization.strategy",
      `unknown strategy "${strategy}"; expected one of append, merge, overwrite`,
    );
  }
  if (strategy === "scd2") {
    throw new ConfigError(
      "materialization.strategy",
      "scd2 is not supported yet by the lake writer; use merge (with primary_key) or append",
    );
  }
  const primaryKey = contract.primaryKey ?? [];
  if (strategy === "merge" && primaryKey.length === 0) {
    throw new ConfigError(
      "primary_key",
      "materialization.strategy merge needs a primary_key to match rows on; without one a merge would " +
        "silently become an append. Declare primary_key: [..] or choose strategy append/overwrite",
    );
  }

  const lake = format === "ducklake" ? duckLakeTarget(contract, options.targetPath ?? m.targetPath) : undefined;
  const table = lake?.table ?? (m.table || contract.dataset);
  checkName("materialization.table", table, format);
  const fields = contract.fields ?? [];
  const names = new Set<string>();
  for (const f of fields) {
    if (!FIELD_TYPES.includes(f.type)) {
      throw new ConfigError(`model.fields.${f.name}.type`, `unknown field type "${String(f.type)}"`);
    }
    if (names.has(f.name.toLowerCase())) {
      // DuckDB column names are case-insensitive.
      throw new ConfigError(`model.fields.${f.name}`, "declared twice (column names are case-insensitive)");
    }
    names.add(f.name.toLowerCase());
    if (f.type === "decimal") {
      const p = f.precision ?? 38;
      const s = f.scale ?? 9;
      if (!Number.isInteger(p) || p < 1 || p > 38 || !Number.isInteger(s) || s < 0 || s > p) {
        throw new ConfigError(`model.fields.${f.name}.type`, `decimal(${p},${s}) needs 1 <= precision <= 38 and 0 <= scale <= precision`);
      }
    }
  }
  const schemaless = fields.length === 0;
  for (const k of primaryKey) {
    if (!schemaless && !names.has(k.toLowerCase())) {
      throw new ConfigError("primary_key", `"${k}" is not a declared field (declared: ${fields.map((f) => f.name).join(", ")})`);
    }
    if (schemaless && k.toLowerCase() === RECORD_COLUMN) {
      throw new ConfigError("primary_key", `"${RECORD_COLUMN}" is reserved for the stored record of a contract without fields`);
    }
  }
  const keepExtra = !schemaless && contract.schemaPolicy?.unknownFields === "allow";
  if (keepExtra && names.has(EXTRA_COLUMN)) {
    throw new ConfigError(`model.fields.${EXTRA_COLUMN}`, `"${EXTRA_COLUMN}" is reserved for undeclared fields under schema_policy.unknown_fields: allow`);
  }

  const q = contract.quarantine;
  // A DuckLake quarantine is a table of the same catalog; the original spells it `table:catalog.schema.name`.
  const qTarget = format === "ducklake" && q?.target?.startsWith("table:") ? q.target.split(".").pop()! : q?.target || `${table}_quarantine`;
  checkQuarantineTarget(qTarget, table, format);
  // Quarantine lives next to the table so one batch is one atomic write; a different format
  // written explicitly in the contract cannot honour that.
  const rawQ = contract.raw?.["quarantine"];
  const explicitQFormat =
    rawQ !== null && typeof rawQ === "object" && (rawQ as Record<string, unknown>)["format"] !== undefined;
  if (explicitQFormat && isQuarantinePath(qTarget)) {
    // A format this runtime does not write (delta, …; the loader warned) falls back to Parquet here.
    if (q?.declaredFormat === undefined) checkPathFormat(qTarget, String(q?.format), format);
  } else if (explicitQFormat && q?.format !== format) {
    throw new ConfigError(
      "quarantine.format",
      `"${String(q?.format)}" differs from materialization.format "${format}"; quarantine is written in the ` +
        "same database/format as the table so that a batch commits atomically. Remove quarantine.format or make them match",
    );
  }

  const ducklake = lake ? duckLakeLocation(contract, lake) : undefined;
  const targetPath = ducklake?.dataPath ?? options.targetPath ?? m.targetPath ?? DEFAULT_TARGET_PATH;
  checkLakeLocation(targetPath, format);
  const qDir = isQuarantinePath(qTarget) ? { dir: quarantineLocation(qTarget, table) } : {};
  return {
    format: format as LakeFormat,
    strategy: strategy as LakeConfig["strategy"],
    targetPath: isUri(targetPath) ? trimUri(targetPath) : resolve(targetPath),
    ...(ducklake ? { ducklake } : {}),
    table,
    primaryKey,
    fields,
    schemaless,
    keepExtra,
    evolution: contract.schemaPolicy?.evolution ?? "allow",
    quarantine: {
      enabled: q?.enabled ?? true,
      target: qTarget,
      includeErrorReason: q?.includeErrorReason ?? true,
      ...qDir,
    },
  };
}

/**
 * A DuckLake target as the contract gives it: a directory or URI for the data files (`--target-path`
 * too), or the original's `table:<catalog>.<schema>.<table>`, whose catalog and data path come
 * from `metadata.ducklake_metadata` / `ducklake_data_path` (or DUCKLAKE_METADATA / DUCKLAKE_DATA_PATH).
 */
interface DuckLakeTarget {
  /** The data directory or URI, when the target is one. */
  dir?: string;
  table?: string;
  schema: string;
}

function duckLakeTarget(contract: Contract, target: string | undefined): DuckLakeTarget {
  if (target === undefined || !target.startsWith("table:")) return { ...(target !== undefined ? { dir: target } : {}), schema: "main" };
  const parts = target.slice("table:".length).split(".").filter((p) => p !== "");
  if (parts.length < 2 || parts.length > 3) {
    throw new ConfigError("materialization.target_path", `"${target}": a DuckLake table target is table:<catalog>.[<schema>.]<table>`);
  }
  return { table: parts[parts.length - 1]!, schema: parts.length === 3 ? parts[1]! : "main" };
}

/** The original's defaults when a `table:` target names neither catalog nor data path. */
const PYTHON_DUCKLAKE_CATALOG = "./lakehouse/ducklake_catalog.ducklake";
const PYTHON_DUCKLAKE_DATA = "./lakehouse/ducklake_data/";

function duckLakeLocation(contract: Contract, target: DuckLakeTarget, env: NodeJS.ProcessEnv = process.env): DuckLakeLocation {
  const meta = contract.raw?.["metadata"];
  const given = (key: string, variable: string): string | undefined => {
    const v = meta !== null && typeof meta === "object" ? (meta as Record<string, unknown>)[key] : undefined;
    if (v !== undefined && (typeof v !== "string" || v.trim() === "")) throw new ConfigError(`metadata.${key}`, "expected a non-empty string");
    return v ?? (env[variable]?.trim() || undefined);
  };
  const data = given("ducklake_data_path", "DUCKLAKE_DATA_PATH") ?? target.dir ?? (target.table !== undefined ? PYTHON_DUCKLAKE_DATA : DEFAULT_TARGET_PATH);
  checkLakeLocation(data, "ducklake");
  const dataPath = `${isUri(data) ? trimUri(data) : resolve(data)}/`;
  let catalog = given("ducklake_metadata", "DUCKLAKE_METADATA");
  if (catalog === undefined) {
    if (target.table !== undefined) catalog = PYTHON_DUCKLAKE_CATALOG;
    else if (isUri(data)) {
      throw new ConfigError(
        "metadata.ducklake_metadata",
        `a DuckLake whose data files are at ${redactUrl(data)} needs a catalog every writer reaches: set metadata.ducklake_metadata ` +
          `(or DUCKLAKE_METADATA) to postgres:<parameters>, e.g. "postgres:dbname=lake host=db.internal" with the password in PGPASSWORD`,
      );
    } else catalog = join(resolve(data), DUCKLAKE_CATALOG_FILE);
  }
  return { catalog: catalogLocation(catalog), dataPath, schema: target.schema };
}

/** A catalog DuckLake can attach here: PostgreSQL, or a DuckDB file (given as a path, or `duckdb:<path>`). */
function catalogLocation(catalog: string): string {
  const c = catalog.trim().replace(/^ducklake:/, "");
  if (/^postgres(ql)?:/i.test(c)) return `postgres:${c.replace(/^postgres(ql)?:/i, "")}`;
  if (/^(md|motherduck|sqlite|mysql):/i.test(c) || isUri(c)) {
    throw new ConfigError(
      "metadata.ducklake_metadata",
      `"${redactText(c)}": this runtime attaches a DuckLake catalog in PostgreSQL (postgres:<parameters>) or in a DuckDB file (a path)`,
    );
  }
  return resolve(c.replace(/^duckdb:/i, ""));
}

/** Whether a location is a URI (`s3://bucket/lake`) rather than a path. */
export function isUri(location: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(location);
}

/** A URI without trailing slashes, so `<uri>/<table>` has one. */
function trimUri(uri: string): string {
  return uri.replace(/\/+$/, "");
}

/** `<location>/<name>`: a URI is joined with one `/`, a path as a path. */
export function joinLocation(location: string, name: string): string {
  return isUri(location) ? `${trimUri(location)}/${name}` : join(location, name);
}

/**
 * Where a table's quarantine is, one rule for every writer (the lakes, SparkStreamSink): a
 * `quarantine.target` that is a path (or URI) is a directory holding `<table>` (see
 * LakeConfig.quarantine.dir); a name is a table beside the data, `<lake>/<target>`, `lake`
 * being the directory that holds the table.
 */
export function quarantineLocationIn(lake: string, table: string, target: string): string {
  return isQuarantinePath(target) ? quarantineLocation(target, table) : joinLocation(lake, target);
}

/** Where a resolved lake's quarantine is (quarantineLocationIn, for its table and target). */
export function quarantineLocationOf(config: LakeConfig): string {
  return quarantineLocationIn(config.targetPath, config.table, config.quarantine.target);
}

/** A path (or, for delta, URI) quarantine target's location for `table`. */
function quarantineLocation(target: string, table: string): string {
  if (!isUri(target)) return quarantinePathDir(target, table);
  const uri = trimUri(target);
  return uri.split("/").pop() === table ? uri : `${uri}/${table}`;
}

/**
 * A lake location the format can write, as a ConfigError otherwise. duckdb and parquet write a
 * directory on this machine's disk, so a URI (`s3://bucket/lake`, `ftp://…`) is refused for them
 * rather than taken for a relative path named `s3:` — a lake that would silently stay on the one
 * machine that wrote it. delta writes object storage too (delta-rs's schemes).
 */
export function checkLakeLocation(targetPath: unknown, format = "duckdb"): void {
  if (typeof targetPath !== "string" || targetPath.trim() === "") {
    throw new ConfigError("targetPath", "expected a directory path");
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(targetPath)?.[1]?.toLowerCase();
  if (scheme === undefined) return;
  if (format === "delta" && DELTA_SCHEMES.includes(scheme)) return;
  if (format === "ducklake" && DUCKLAKE_DATA_SCHEMES.includes(scheme)) return;
  const can = DELTA_SCHEMES.filter((s) => s !== "file").map((s) => `${s}://`).join(", ");
  if (format === "ducklake") {
    throw new ConfigError("targetPath", `${redactUrl(targetPath)}: format ducklake keeps data files in a local directory or under ${DUCKLAKE_DATA_SCHEMES.map((s) => `${s}://`).join(", ")}; not ${scheme}://`);
  }
  throw new ConfigError(
    "targetPath",
    format === "delta"
      ? `${redactUrl(targetPath)}: format delta writes a local path or one of ${can}; not ${scheme}://`
      : `${redactUrl(targetPath)}: the lake format ${format} writes a directory on this machine's disk, not a ${scheme}:// location; ` +
          `give a local or mounted directory path, or write materialization.format: delta (which writes ${can}) or ducklake`,
  );
}

/** Table names double as directory names (parquet), so keep them to one safe path segment. */
/**
 * The quarantine target beside `table` (checked on its own with checkName): a ConfigError on
 * `quarantine.target` when the lake would refuse it. Lint asks the same question.
 */
export function checkQuarantineTarget(target: string, table: string, format: string): void {
  if (isQuarantinePath(target)) {
    checkQuarantinePath(target, format);
    return;
  }
  checkName("quarantine.target", target, format);
  if (target.toLowerCase() === table.toLowerCase()) {
    throw new ConfigError("quarantine.target", `must differ from the table name "${table}"`);
  }
}

/**
 * A quarantine target that is a path: a local directory. Both lakes write Parquet files there
 * and list them where the batch commits (the parquet manifest; a table in the duckdb lake's
 * database), so the files of a batch count exactly when its rows do.
 */
function checkQuarantinePath(target: string, format: string): void {
  if (format === "ducklake") {
    throw new ConfigError("quarantine.target", `"${target}" is a path; a DuckLake keeps its quarantine as a table of its catalog: give quarantine.target as a table name`);
  }
  if (format === "delta" && isUri(target)) return checkLakeLocation(target, format);
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(target)) {
    throw new ConfigError("quarantine.target", `"${target}" is a URL; this lake writes quarantine to a local directory or a table beside the data`);
  }
  if (target.includes("\0")) throw new ConfigError("quarantine.target", "must not contain a NUL character");
}

/**
 * `quarantine.format` written explicitly beside a path target: the files under a path are
 * Parquet on either lake. A DuckDB database file there could not commit with the batch: the
 * duckdb lake commits a batch in one transaction, and DuckDB lets one transaction write one
 * database file.
 */
function checkPathFormat(target: string, qFormat: string, format: string): void {
  // A delta lake's quarantine under a path is a Delta table there (as the Python package writes it).
  if (format === "delta") {
    if (qFormat === "delta") return;
    throw new ConfigError("quarantine.format", `"${qFormat}" differs from materialization.format delta; the quarantine under "${target}" is a Delta table. Remove quarantine.format or set it to delta`);
  }
  if (qFormat === "parquet") return;
  if (format === "duckdb") {
    throw new ConfigError(
      "quarantine.format",
      `"${qFormat}" with quarantine.target "${target}" (a directory) would put quarantine rows in a second DuckDB database file; ` +
        "a duckdb lake commits a batch in one transaction, and one transaction can write only one database file, so those rows " +
        "could not commit with the batch. Remove quarantine.format (or set it to parquet): the directory then holds Parquet files " +
        "that the lake lists in its own database in the batch's transaction; or give quarantine.target as a table name to keep " +
        "quarantine rows in the lake's database",
    );
  }
  throw new ConfigError(
    "quarantine.format",
    `"${qFormat}" differs from materialization.format "${format}"; quarantine files under "${target}" are written as parquet. ` +
      "Remove quarantine.format or set it to parquet",
  );
}

/** A table or quarantine name the lake can use (a ConfigError on `option` otherwise). Lint asks the same question. */
export function checkName(option: string, name: string, format: string): void {
  if (typeof name !== "string" || name.trim() === "") throw new ConfigError(option, "must not be empty");
  if (name === "." || name === ".." || /[/\\\0]/.test(name) || name.startsWith("_lakelogic")) {
    throw new ConfigError(option, `"${name}" is not a usable table name (no path separators, not "."/"..", not starting with _lakelogic)`);
  }
  // The DuckDB writer's temporary staging table: DuckDB resolves an unqualified name to a
  // temporary table first, so a table of this name would have its rows written there instead.
  if (format === "duckdb" && name.toLowerCase() === "lakelogic_stage") {
    throw new ConfigError(option, `"${name}" is reserved for the DuckDB writer's staging table; choose another name`);
  }
}
