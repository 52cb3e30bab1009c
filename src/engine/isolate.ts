/**
 * When a rule throws inside the engine on some rows (a cast that does not convert, a pattern
 * read from a field), those rows are set aside as bad rows carrying the engine's message, and
 * the batch is validated without them. Shared by both engines, so that the rows, counts and
 * messages they give for such rows have one shape.
 */
import { defineLazy } from "../util/lazy.js";
import type { BadRow, RuleFailure, ValidationResult } from "./types.js";

const MAX_MESSAGE = 500;

/**
 * The engine's own message, without what follows its first blank line: DuckDB appends the
 * statement's text there ("LINE 1: …", the engine's internal SQL), Polars advice on its API.
 */
export function engineMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const first = text.split(/\n[ \t]*\n/, 1)[0]!.trim();
  return first.length > MAX_MESSAGE ? first.slice(0, MAX_MESSAGE - 1) + "…" : first;
}

/** The failure a row gets when evaluating `ruleId` on it throws. */
export function evaluationFailure(ruleId: string, err: unknown): RuleFailure {
  return { ruleId, message: `${ruleId}: cannot be evaluated: ${engineMessage(err)}` };
}

/** Record index → the rules that threw on that record. */
export type PoisonRows = Map<number, RuleFailure[]>;

export function addPoison(poison: PoisonRows, index: number, failure: RuleFailure): void {
  const errors = poison.get(index);
  if (errors) errors.push(failure);
  else poison.set(index, [failure]);
}

/** The records other than the poison ones, and each one's index in `records`. */
export function withoutPoison(records: readonly unknown[], poison: PoisonRows): { rest: unknown[]; origin: number[] } {
  const rest: unknown[] = [];
  const origin: number[] = [];
  for (let i = 0; i < records.length; i++) {
    if (poison.has(i)) continue;
    rest.push(records[i]);
    origin.push(i);
  }
  return { rest, origin };
}

/**
 * The batch's result from the result over `rest` (see withoutPoison): bad rows renumbered and
 * merged with the poison rows in arrival order, and each rule that threw counted as failed on
 * the rows it threw on. Good rows, GoodColumns and dataset rules are the rest's: poison rows are
 * bad rows, so the good rows are the same.
 */
export function withPoisonRows(records: readonly unknown[], poison: PoisonRows, origin: readonly number[], res: ValidationResult): ValidationResult {
  const set = [...poison.entries()].sort((a, b) => a[0] - b[0]).map(([index, errors]): BadRow => ({ index, record: records[index], errors }));
  const bad: BadRow[] = [];
  let p = 0;
  for (const b of res.bad) {
    const index = origin[b.index]!;
    while (p < set.length && set[p]!.index < index) bad.push(set[p++]!);
    bad.push({ ...b, index });
  }
  while (p < set.length) bad.push(set[p++]!);

  const added = new Map<string, number>();
  for (const errors of poison.values()) for (const e of errors) added.set(e.ruleId, (added.get(e.ruleId) ?? 0) + 1);
  const ruleCounts = res.ruleCounts.map((c) => {
    const n = added.get(c.ruleId);
    return n === undefined ? c : { ...c, failed: c.failed + n };
  });

  const out = { goodCount: res.goodCount, supersededCount: res.supersededCount, bad, ruleCounts, datasetRules: res.datasetRules } as ValidationResult;
  if (res.goodColumns) out.goodColumns = res.goodColumns;
  // Forwarded, not read: the rows may be built only when asked for.
  return defineLazy(out, "good", () => res.good);
}

/**
 * The positions in `[0, length)` on which `throws` fails when given them alone, each with its own
 * error, found by halving: a slice on which it throws is split until single rows remain. Poison
 * rows are rare, so this costs a few evaluations per poison row. `throws(offset, length)` returns
 * the error evaluating that slice raised, or undefined. Positions come out in ascending order.
 */
export async function throwingRows(
  length: number,
  throws: (offset: number, length: number) => unknown,
): Promise<Array<{ position: number; error: unknown }>> {
  const found: Array<{ position: number; error: unknown }> = [];
  const pending: Array<[offset: number, length: number]> = length > 0 ? [[0, length]] : [];
  while (pending.length > 0) {
    const [offset, n] = pending.pop()!;
    const error: unknown = await throws(offset, n);
    if (error === undefined) continue;
    if (n === 1) found.push({ position: offset, error });
    else {
      const half = Math.ceil(n / 2);
      // Later half first: rows come off the stack in arrival order.
      pending.push([offset + half, n - half], [offset, half]);
    }
  }
  return found;
}
