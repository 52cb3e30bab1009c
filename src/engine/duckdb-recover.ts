/**
 * What the DuckDB engine does when a batch's statement throws. The normal path is one
 * statement; this runs only after it failed, so it may take a few more:
 *
 * 1. each sql rule alone over the batch, halving the slices on which it throws down to single
 *    records, each with its own message; those records become bad rows (see isolate.ts) and the
 *    rest is validated again;
 * 2. when no rule throws (or the rest still fails), the statement without its dataset measures,
 *    then each measure alone: a measure that throws is reported as its rule failing.
 *
 * Anything else is not the data's doing: the statement's own error is thrown, as before.
 */
import type { DuckDBConnection } from "../util/duckdb.js";
import { assemble, emptyOutput, type EngineOutput } from "./assemble.js";
import { batchPayload, buildStatement } from "./duckdb-sql.js";
import { encodeBatch, type EncodedBatch } from "./encode.js";
import { addPoison, engineMessage, evaluationFailure, throwingRows, withoutPoison, withPoisonRows, type PoisonRows } from "./isolate.js";
import type { Plan } from "./plan-types.js";
import type { ValidationResult } from "./types.js";

export interface RecoverContext {
  conn: DuckDBConnection;
  plan: Plan;
  /** The contract's statement adds the merge's keys (keyedTarget). */
  keys: boolean;
  /** Runs the contract's prepared validation statement over a batch document. */
  validate(payload: string): Promise<EngineOutput>;
  /** Runs another validation statement of the same shape over a batch document. */
  validateWith(sql: string, payload: string): Promise<EngineOutput>;
}

export async function recoverBatch(
  cx: RecoverContext,
  records: readonly unknown[],
  enc: EncodedBatch,
  payload: string,
  failure: unknown,
): Promise<ValidationResult> {
  const plan = cx.plan;
  const poison = await poisonRows(cx, records, enc);
  if (poison.size === 0) return assemble(records, plan, enc, await withoutFailingMeasures(cx, payload, failure));
  const { rest, origin } = withoutPoison(records, poison);
  const restEnc = encodeBatch(rest, plan);
  let out: EngineOutput;
  if (restEnc.n === 0) out = emptyOutput(plan);
  else {
    const restPayload = await batchPayload(plan, restEnc);
    try {
      out = await cx.validate(restPayload);
    } catch {
      out = await withoutFailingMeasures(cx, restPayload, failure);
    }
  }
  return withPoisonRows(records, poison, origin, assemble(rest, plan, restEnc, out));
}

/**
 * The records on which a sql rule throws, each with the rules that throw on it and their messages:
 * found by halving (throwingRows), each slice evaluated with the rule alone. Not with TRY over the
 * batch: DuckDB's row-by-row fallback of TRY has crashed the process here (a segmentation fault
 * under load), and a crash is worse than a few more statements on a batch that already failed.
 */
async function poisonRows(cx: RecoverContext, records: readonly unknown[], enc: EncodedBatch): Promise<PoisonRows> {
  const { conn, plan } = cx;
  const poison: PoisonRows = new Map();
  for (const check of plan.checks) {
    const rule = check.rule;
    if (rule?.kind !== "sql") continue;
    const alone = await conn.prepare(buildStatement(plan, { probe: rule.sql }));
    try {
      const throws = async (offset: number, length: number): Promise<unknown> => {
        const slice = Array.from(enc.index.subarray(offset, offset + length), (index) => records[index]);
        alone.bindVarchar(1, await batchPayload(plan, encodeBatch(slice, plan)));
        try {
          await alone.run();
          return undefined;
        } catch (err) {
          return err ?? new Error("failed");
        }
      };
      for (const { position, error } of await throwingRows(enc.n, throws)) addPoison(poison, enc.index[position]!, evaluationFailure(check.ruleId, error));
    } finally {
      alone.destroySync();
    }
  }
  return poison;
}

/**
 * The batch's output with each dataset measure taken on its own: one that throws is reported as
 * its rule failing. Throws `failure` when the statement fails without measures too.
 */
async function withoutFailingMeasures(cx: RecoverContext, payload: string, failure: unknown): Promise<EngineOutput> {
  const plan = cx.plan;
  if (plan.dataset.length === 0) throw failure;
  let out: EngineOutput;
  try {
    out = await cx.validateWith(buildStatement(plan, { keys: cx.keys, measures: false }), payload);
  } catch {
    throw failure;
  }
  const dataset: Array<number | null> = [];
  const datasetErrors: Array<string | undefined> = [];
  for (let i = 0; i < plan.dataset.length; i++) {
    try {
      const r = await cx.conn.runAndReadAll(buildStatement(plan, { measures: i }), [payload]);
      const v = r.getRows()[0]?.[0];
      dataset.push(v === null || v === undefined ? null : Number(v));
    } catch (err) {
      dataset.push(0);
      datasetErrors[i] = engineMessage(err);
    }
  }
  return { ...out, dataset, datasetErrors };
}
