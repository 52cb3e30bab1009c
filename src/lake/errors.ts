import { LakeLogicError, NonRetriableError } from "../errors.js";

// Raised by the JSON writer in src/util, which the lake uses; kept importable from here.
export { JsonValueError } from "../errors.js";

/**
 * A batch could not be written; nothing of it is visible (the transaction or manifest rolled back).
 * Not retriable unless said: writing the same rows again fails the same way.
 */
export class LakeWriteError extends LakeLogicError {
  constructor(message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super("LAKE_WRITE", message, { ...options, retriable: options.retriable ?? false });
  }
}

/** The process holding a lake's lock, as the lock's owner says it (DuckDB names it). */
export interface LakeHolder {
  pid: number;
  program: string;
}

/** Another live writer holds the dataset (one writer per table); it may let go. */
export class LakeBusyError extends LakeLogicError {
  constructor(
    message: string,
    readonly holder?: LakeHolder,
  ) {
    super("LAKE_BUSY", message);
  }
}

/** One thing a table was written with that the contract now says otherwise (`was` → `now`). */
export interface TableChange {
  /** The contract option at fault: `primary_key`, `materialization.strategy`, `model.fields.<name>`. */
  option: string;
  was: string;
  now: string;
}

/**
 * The contract no longer matches the table it writes to (docs/lake.md, "The table's contract"):
 * another primary key or strategy, a column's type, or — under `schema_policy.evolution:
 * strict` — fields added or removed. Refused when the lake opens, before any record is read;
 * every run fails the same way until the contract or the table changes, so never retriable.
 */
export class TableContractError extends NonRetriableError {
  readonly table: string;
  readonly changes: readonly TableChange[];
  constructor(table: string, changes: readonly TableChange[], message: string) {
    super("LAKE_TABLE_CONTRACT", message);
    this.table = table;
    this.changes = changes;
  }
}
