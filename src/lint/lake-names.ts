/**
 * Table and quarantine names as the lake sees them: the loader's own check (resolveLakeConfig),
 * run on the names alone, in the contract's format.
 */
import type { YamlPath } from "../contract/yaml.js";
import type { Contract } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import { resolveLakeConfig } from "../lake/config.js";
import type { RawContract } from "./raw.js";

/** A name written in the contract, with the key it is written under. */
export interface WrittenName {
  value: string;
  path: YamlPath;
}

function written(contract: RawContract, path: YamlPath): WrittenName | undefined {
  const value = contract.text(path)?.trim();
  return value === undefined || value === "" ? undefined : { value, path };
}

/**
 * The table name, where the loader takes it from: `materialization.table`, else
 * `info.table_name`, else `dataset`. Undefined when none is written (the loader then derives a
 * slug, which is always usable).
 */
export function tableNameOf(contract: RawContract): WrittenName | undefined {
  return (
    written(contract, ["materialization", "table"]) ??
    written(contract, ["info", "table_name"]) ??
    written(contract, ["dataset"])
  );
}

/** The quarantine target as written (`target`, else `table`, else `location`); the default is derived from the table. */
export function quarantineTargetOf(contract: RawContract): WrittenName | undefined {
  return (
    written(contract, ["quarantine", "target"]) ??
    written(contract, ["quarantine", "table"]) ??
    written(contract, ["quarantine", "location"])
  );
}

/** Whether the lake is a DuckDB database (the default format), where the staging table lives. */
export function writesDuckDb(contract: RawContract): boolean {
  const format = contract.text(["materialization", "format"])?.trim().toLowerCase();
  return format === undefined || format === "" || format === "duckdb";
}

/** Just enough of a contract for resolveLakeConfig to judge two names. */
function namesOnly(table: string, quarantineTarget: string, duckdb: boolean): Contract {
  return {
    info: {},
    dataset: table,
    primaryKey: [],
    fields: [],
    rowRules: [],
    datasetRules: [],
    materialization: { strategy: "append", strategyDeclared: false, format: duckdb ? "duckdb" : "parquet", table, partitionBy: [] },
    quarantine: { enabled: true, target: quarantineTarget, format: "duckdb", includeErrorReason: true },
    schemaPolicy: { evolution: "strict", unknownFields: "drop" },
    warnings: [],
    raw: {},
  };
}

/** The loader's complaint about these names, for `option` (`materialization.table` or `quarantine.target`). */
function loaderRefusal(table: string, quarantineTarget: string, option: string, duckdb: boolean): string | undefined {
  try {
    resolveLakeConfig(namesOnly(table, quarantineTarget, duckdb));
    return undefined;
  } catch (err) {
    if (err instanceof ConfigError && err.option === option) return err.detail;
    if (err instanceof ConfigError) return undefined;
    throw err;
  }
}

/** Why the lake would refuse (or misroute) `table` as the data table; undefined when it is usable. */
export function tableNameProblem(table: string, duckdb: boolean): string | undefined {
  return loaderRefusal(table, `${table}_quarantine`, "materialization.table", duckdb);
}

/**
 * Why the lake would refuse (or misroute) `target` as the quarantine target next to `table`
 * (undefined: a table name lint cannot know, derived from the title or the file name).
 */
export function quarantineTargetProblem(target: string, table: string | undefined, duckdb: boolean): string | undefined {
  // Without a usable table, judge the target on its own, beside a name it cannot clash with.
  const usable = table !== undefined && tableNameProblem(table, duckdb) === undefined;
  const beside = usable ? table : target.toLowerCase() === "t" ? "u" : "t";
  return loaderRefusal(beside, target, "quarantine.target", duckdb);
}
