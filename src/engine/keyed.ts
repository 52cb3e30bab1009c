/**
 * What a contract's primary key asks of a batch, by strategy. Both engines read it through the
 * plan (plan.ts), so they agree on which rows are superseded and which keys are missing.
 *
 * - `merge`, and `overwrite` with a primary key, replace stored rows by key: of the good rows of
 *   one batch that share a key only the last (arrival order) is written, and the earlier ones are
 *   counted as superseded. Judging after validation means a later bad event never erases an
 *   earlier good one — the result is the same wherever the batches were cut.
 * - `scd2` keeps every version of a key: nothing is superseded.
 * - `append` (and `overwrite` without a key) does not use the key: nothing is superseded and a
 *   null key is stored as it is.
 */
import type { Contract } from "../contract/types.js";

/** Rule id of the built-in check that quarantines a row with a null or missing key part. */
export const PRIMARY_KEY_RULE = "primary_key_not_null";

/** Does the target replace rows by their primary key (merge, keyed overwrite)? */
export function keyedTarget(contract: Contract): boolean {
  const strategy = contract.materialization.strategy;
  return contract.primaryKey.length > 0 && (strategy === "merge" || strategy === "overwrite");
}

/**
 * Are the target's rows identified by their key (keyed targets and scd2)? A key part that is null
 * or missing then makes the row bad: as a key it would match every other null key.
 */
export function keyIdentifiesRows(contract: Contract): boolean {
  return keyedTarget(contract) || (contract.primaryKey.length > 0 && contract.materialization.strategy === "scd2");
}
