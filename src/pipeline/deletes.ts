import type { Contract } from "../contract/types.js";
import { ConfigError } from "../errors.js";
import type { Source } from "../sources/core/types.js";

/**
 * Refuse, before anything is read, a source that deletes keys (`CursorSource.deletes`: a Kafka
 * topic with `tombstones: delete`) writing into a target that cannot apply deletes: only a merge
 * target has one row per primary key to delete.
 */
export function assertTargetTakesDeletes(source: Source, contract: Contract): void {
  if (source.kind !== "cursor" || !source.deletes) return;
  const strategy = contract.materialization.strategy;
  const problem =
    strategy !== "merge"
      ? `its materialization.strategy is ${strategy}, which keeps every row it is given: a delete there would remove history`
      : contract.primaryKey.length === 0
        ? "it has no primary_key, so a delete names no row"
        : undefined;
  if (problem === undefined) return;
  throw new ConfigError(
    "tombstones",
    `${source.description} deletes rows (tombstones: delete), which needs a merge target with a primary key, but contract "${contract.dataset}" ` +
      `cannot take them: ${problem}. Use tombstones: quarantine (the default) to keep tombstones in quarantine instead`,
  );
}
