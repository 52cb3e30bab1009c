/**
 * Table and quarantine names as the lake sees them: the lake's own name checks (src/lake/config.ts),
 * in the contract's format.
 */
import type { YamlPath } from "../contract/yaml.js";
import { ConfigError } from "../errors.js";
import { checkName, checkQuarantineTarget } from "../lake/config.js";
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

/** The lake's complaint in `check`, or undefined when it has none. */
function refusal(check: () => void): string | undefined {
  try {
    check();
    return undefined;
  } catch (err) {
    if (err instanceof ConfigError) return err.detail;
    throw err;
  }
}

/** Why the lake would refuse (or misroute) `table` as the data table; undefined when it is usable. */
export function tableNameProblem(table: string, duckdb: boolean): string | undefined {
  return refusal(() => checkName("materialization.table", table, duckdb ? "duckdb" : "parquet"));
}

/**
 * Why the lake would refuse (or misroute) `target` as the quarantine target next to `table`
 * (undefined: a table name lint cannot know, derived from the title or the file name).
 */
export function quarantineTargetProblem(target: string, table: string | undefined, duckdb: boolean): string | undefined {
  const format = duckdb ? "duckdb" : "parquet";
  // Without a usable table, judge the target on its own.
  const usable = table !== undefined && tableNameProblem(table, duckdb) === undefined;
  return refusal(() => (usable ? checkQuarantineTarget(target, table, format) : checkName("quarantine.target", target, format)));
}
