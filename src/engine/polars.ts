/**
 * Polars engine: the same plan as DuckDB, compiled to Polars expressions over a lazy
 * frame of the batch's tagged-text columns; `sql` rules run through Polars' SQLContext
 * on the typed columns. nodejs-polars is an optional peer dependency, loaded on first use.
 */
import v8 from "node:v8";
import vm from "node:vm";
import type * as PolarsModule from "nodejs-polars";
import { rowRuleSql as sqlRule } from "../contract/sql-bind.js";
import type { Contract } from "../contract/types.js";
import { ConfigError, MissingDependencyError } from "../errors.js";
import { assemble, emptyOutput, type EngineOutput } from "./assemble.js";
import { inlineStaged, stageComposite } from "./composite.js";
import { dryRunBatch, encodeBatch, type EncodedBatch } from "./encode.js";
import type { Expr, Layer } from "./ir.js";
import { addPoison, engineMessage, evaluationFailure, throwingRows, withoutPoison, withPoisonRows, type PoisonRows } from "./isolate.js";
import { polarsMeasure } from "./dataset-measure.js";
import { compilePlan } from "./plan.js";
import { BAD_COL, FAIL_COL, SUPERSEDED_COL, UNKNOWN_COL, type Plan } from "./plan-types.js";
import { toRustRegex } from "./regex.js";
import { quoteIdent } from "../util/sql-text.js";
import type { Engine, ValidationResult } from "./types.js";
import { goodParquet, keptColumns, rowPositions } from "./polars-good.js";
import { textInExprs, withTextColumns, type TextIn } from "./polars-text.js";

type Pl = typeof PolarsModule.default;
type PExpr = PolarsModule.Expr;
type LazyFrame = PolarsModule.LazyDataFrame;
type DataFrame = PolarsModule.DataFrame;

async function loadPolars(): Promise<Pl> {
  try {
    const mod = (await import("nodejs-polars")) as unknown as { default?: Pl } & Pl;
    // CommonJS package: the namespace's default is module.exports, which carries everything.
    return mod.default ?? mod;
  } catch (err) {
    throw new MissingDependencyError("nodejs-polars", "The polars engine", { cause: err });
  }
}

/**
 * An IR expression's identity for sharing built expressions: its JSON, with the values JSON
 * would confuse spelt apart (a bigint, NaN, ±Infinity, -0 — JSON writes the last three as `null`
 * and `0`). IR nodes are plain data, so an object in a value's place cannot come from the IR.
 */
export function exprKey(e: Expr): string {
  return JSON.stringify(e, (_, v: unknown) =>
    typeof v === "bigint" ? { bigint: v.toString() } : typeof v === "number" && (!Number.isFinite(v) || Object.is(v, -0)) ? { number: String(v) } : v,
  );
}

class Compiler {
  /**
   * Expressions built so far, by their IR's JSON. A plan repeats subtrees (a field's coerced
   * value feeds several checks) and nodejs-polars builds each expression wrapper with a few
   * hundred closures: sharing the immutable expressions makes compiling a contract several
   * times faster.
   */
  private readonly built = new Map<string, PExpr>();

  constructor(private readonly pl: Pl) {}

  private dtype(t: "utf8" | "int64" | "float64" | "bool"): PolarsModule.DataType {
    const pl = this.pl;
    return t === "utf8" ? pl.Utf8 : t === "int64" ? pl.Int64 : t === "float64" ? pl.Float64 : pl.Bool;
  }

  private nullIfEmpty(x: PExpr): PExpr {
    const pl = this.pl;
    return pl.when(x.eq(pl.lit(""))).then(pl.lit(null).cast(pl.Utf8)).otherwise(x);
  }

  /** nodejs-polars declares `concatString` as returning `any`; it builds an expression. */
  private concat(parts: PExpr[], sep: string, ignoreNulls: boolean): PExpr {
    const concatString: (exprs: PExpr[], sep: string, ignoreNulls: boolean) => PExpr = this.pl.concatString;
    return concatString(parts, sep, ignoreNulls);
  }

  expr(e: Expr): PExpr {
    const key = exprKey(e);
    let built = this.built.get(key);
    if (!built) {
      built = this.build(e);
      this.built.set(key, built);
    }
    return built;
  }

  private build(e: Expr): PExpr {
    const pl = this.pl;
    const c = (x: Expr): PExpr => this.expr(x);
    switch (e.op) {
      case "col":
        return pl.col(e.name);
      case "lit":
        if (e.value === null) return pl.lit(null).cast(this.dtype(e.type));
        // Int64 literals go through text: a JS number cannot carry every int64.
        if (e.type === "int64") return pl.lit(String(e.value)).cast(pl.Int64);
        if (e.type === "float64") return pl.lit(Number(e.value)).cast(pl.Float64);
        return pl.lit(e.value);
      case "digit8":
        return c(e.e)
          .cast(pl.Float64)
          .div(pl.lit(8 ** e.pos))
          .floor()
          .modulo(pl.lit(8))
          .cast(pl.Int64);
      case "matches":
        return c(e.e).str.contains(toRustRegex(e.pattern));
      case "extract":
        return this.nullIfEmpty(c(e.e).str.extract(e.pattern, e.group));
      case "trimWs":
        return c(e.e).str.stripChars(" \t\n\r");
      case "replaceAll":
        return c(e.e).str.replaceAll(e.pattern, e.replacement.replaceAll("$", "$$"));
      case "fitRight":
        return c(e.e).str.padEnd(e.length, e.fill).str.slice(0, e.length);
      case "concat":
        return this.concat(e.parts.map(c), "", false);
      case "joinNonNull":
        return this.nullIfEmpty(this.concat(e.parts.map(c), e.sep, true));
      case "length":
        return c(e.e).str.lengths().cast(pl.Int64);
      case "cast":
        return c(e.e).cast(this.dtype(e.to), false);
      case "arith": {
        const a = c(e.a);
        const b = c(e.b);
        return e.fn === "+" ? a.plus(b) : e.fn === "-" ? a.minus(b) : a.multiplyBy(b);
      }
      case "cmp": {
        const a = c(e.a);
        const b = c(e.b);
        switch (e.fn) {
          case "=":
            return a.eq(b);
          case "!=":
            return a.neq(b);
          case "<":
            return a.lt(b);
          case "<=":
            return a.ltEq(b);
          case ">":
            return a.gt(b);
          case ">=":
            return a.gtEq(b);
        }
        break;
      }
      case "and":
        return e.args.map(c).reduce((x, y) => x.and(y));
      case "or":
        return e.args.map(c).reduce((x, y) => x.or(y));
      case "not":
        return c(e.e).not();
      case "isNull":
        return c(e.e).isNull();
      case "isFinite":
        return c(e.e).isFinite();
      case "coalesce":
        return e.args.map(c).reduceRight((rest, x) => x.fillNull(rest));
      case "case": {
        const [first, ...more] = e.when;
        let chain = pl.when(c(first![0])).then(c(first![1]));
        for (const [cond, v] of more) chain = chain.when(c(cond)).then(c(v));
        return e.otherwise ? chain.otherwise(c(e.otherwise)) : chain.otherwise(pl.lit(null));
      }
      case "inList": {
        const dt = this.dtype(e.type === "float64" ? "float64" : e.type === "bool" ? "bool" : "utf8");
        return c(e.e).isIn(pl.lit(pl.Series("values", e.values, dt)));
      }
      case "dateToDays":
        return c(e.e).str.strptime(pl.Date, "%Y-%m-%d").cast(pl.Int32).cast(pl.Int64);
      case "daysToDate":
        return c(e.e).cast(pl.Int32).cast(pl.Date);
      case "timestampToMicros":
      case "decimalCanon":
        // Inside another expression the stages cannot run first: inline them (slower).
        return c(inlineStaged(stageComposite(e, "__ll_inline")!));
      case "microsToTimestamp":
        return c(e.e).cast(pl.Datetime("us"));
      case "formatMicros":
        return c(e.e).cast(pl.Datetime("us")).dt.strftime("%Y-%m-%dT%H:%M:%S%.6fZ");
      case "decimalValue":
        return c(e.e).cast(pl.Decimal(e.precision, e.scale), false);
      case "sqlRule":
        throw new Error("sql rules are evaluated through SQLContext");
      case "lastInGroup": {
        // `over` groups NULL keys together, as the op says.
        const [first, ...rest] = e.keys.map(c);
        return c(e.order).eq(c(e.order).max().over(first!, ...rest));
      }
    }
    throw new Error(`unreachable: ${(e as { op: string }).op}`);
  }

  layer(lf: LazyFrame, layer: Layer): LazyFrame {
    return lf.withColumns(...layer.columns.map(([n, e]) => this.expr(e).alias(n)));
  }
}

const RELEASE_EVERY = 8;

let gcFn: (() => void) | null | undefined;
/** `global.gc`, or the same function obtained the way test runners do (jest --logHeapUsage). */
function collector(): (() => void) | undefined {
  if (gcFn === undefined) {
    gcFn = (globalThis as { gc?: () => void }).gc ?? null;
    if (!gcFn) {
      try {
        v8.setFlagsFromString("--expose-gc");
        gcFn = vm.runInNewContext("gc") as () => void;
      } catch {
        gcFn = null;
      }
    }
  }
  return gcFn ?? undefined;
}

interface Compiled {
  plan: Plan;
  compiler: Compiler;
  /** Pre-compiled expressions per layer (Polars expressions are immutable and reusable). */
  layers: PExpr[][];
  postLayers: PExpr[][];
  sqlQuery?: string;
  /** Per plan field, the expressions that rebuild its text column from one joined string (textColumns). */
  textIn: TextIn[];
  /**
   * The expressions that read the evaluated batch, built once: nodejs-polars builds each
   * expression wrapper with a few hundred closures (about 1 ms), so building them per batch cost
   * more than a tenth of the engine's time (bench/validate.ts --engine polars).
   */
  read: {
    /** A row that is written: not bad and, for keyed targets, not superseded by a later row of its key. */
    written: PExpr;
    superseded?: PExpr;
    bad: PExpr;
    badColumns: PExpr[];
    /** One sum per check: how many rows failed it. */
    counts: PExpr[];
    /** The good rows' typed columns as GoodParquet names them (c0, c1, …); empty without outputs. */
    typed: PExpr[];
    /**
     * The columns the good rows are read from (with those `written` reads), or undefined for all
     * of them (a dataset sql rule may read any field): filtering only these copies a fifth of the
     * evaluated batch's columns.
     */
    kept?: string[];
  };
}

export class PolarsEngine implements Engine {
  readonly name = "polars" as const;
  private readonly compiled = new WeakMap<Contract, Compiled>();
  private closed = false;
  private batchesSinceCollect = 0;

  private constructor(private readonly pl: Pl) {}

  static async create(): Promise<PolarsEngine> {
    return new PolarsEngine(await loadPolars());
  }

  async validate(records: readonly unknown[], contract: Contract): Promise<ValidationResult> {
    if (this.closed) throw new Error("engine is closed");
    const c = this.compile(contract);
    const result = await this.validateBatch(records, c);
    await this.releaseFrames();
    return result;
  }

  private async validateBatch(records: readonly unknown[], c: Compiled): Promise<ValidationResult> {
    const enc = encodeBatch(records, c.plan);
    if (enc.n === 0) return assemble(records, c.plan, enc, emptyOutput(c.plan));
    let out: EngineOutput;
    try {
      out = await this.run(c, enc);
    } catch (err) {
      // A rule that throws on some value: set those rows aside rather than fail the batch
      // (which a retry would fail the same way). Anything else is thrown as before.
      const poison = await this.poisonRows(c, records, enc);
      if (poison.size === 0) throw err;
      const { rest, origin } = withoutPoison(records, poison);
      const restEnc = encodeBatch(rest, c.plan);
      let restOut: EngineOutput;
      try {
        restOut = restEnc.n === 0 ? emptyOutput(c.plan) : await this.run(c, restEnc);
      } catch {
        throw err;
      }
      return withPoisonRows(records, poison, origin, assemble(rest, c.plan, restEnc, restOut));
    }
    return assemble(records, c.plan, enc, out);
  }

  /**
   * The records on which a sql rule throws, found by halving (throwingRows): Polars fails a
   * whole column at once, so each row's own error is its message.
   */
  private async poisonRows(c: Compiled, records: readonly unknown[], enc: EncodedBatch): Promise<PoisonRows> {
    const pl = this.pl;
    const poison: PoisonRows = new Map();
    let typed: DataFrame;
    try {
      typed = this.typed(c, enc).collectSync();
    } catch {
      return poison;
    }
    const positions = typed.getColumn("__ll_i").toArray() as number[];
    for (const check of c.plan.checks) {
      const rule = check.rule;
      if (rule?.kind !== "sql") continue;
      const query = `SELECT ${sqlRule(rule.sql)} AS r FROM batch`;
      const throws = (offset: number, length: number): unknown => {
        try {
          pl.SQLContext({ batch: typed.slice(offset, length).lazy() }).execute(query, { eager: true });
          return undefined;
        } catch (err) {
          return err ?? new Error("failed");
        }
      };
      for (const { position, error } of await throwingRows(typed.height, throws)) {
        addPoison(poison, enc.index[positions[position]!]!, evaluationFailure(check.ruleId, error));
      }
    }
    return poison;
  }

  /**
   * nodejs-polars keeps frames on the Rust heap without telling V8 how big they are, so V8
   * sees only small wrappers and may not collect them (and run the finalizers that free the
   * frames) for a long time: measured +15 MB RSS per 10k-row batch, 1.8 GB after 100 batches.
   * So every RELEASE_EVERY batches: let pending work settle, collect, and give the finalizers
   * a turn. Measured: RSS flat; the full GC costs a few ms against ~100 ms per batch.
   */
  private async releaseFrames(): Promise<void> {
    if (++this.batchesSinceCollect < RELEASE_EVERY) return;
    const gc = collector();
    if (!gc) return;
    this.batchesSinceCollect = 0;
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }

  private compile(contract: Contract): Compiled {
    let c = this.compiled.get(contract);
    if (c) return c;
    // Every string field's text is sent: the good rows leave as typed columns (GoodParquet).
    const plan = compilePlan(contract, { allStringText: true });
    const compiler = new Compiler(this.pl);
    // Composite conversions run as extra stages in front of the layer that uses them.
    const build = (layers: Layer[]): PExpr[][] =>
      layers.flatMap((l) => {
        const pre: Array<Array<[string, Expr]>> = [];
        const cols = l.columns.map(([n, e]): [string, Expr] => {
          const staged = stageComposite(e, n);
          if (!staged) return [n, e];
          staged.stages.forEach((stage, i) => (pre[i] ??= []).push(...stage));
          return [n, staged.result];
        });
        return [...pre, cols].map((cs) => cs.map(([n, e]) => compiler.expr(e).alias(n)));
      });
    c = {
      plan,
      compiler,
      layers: build(plan.layers),
      postLayers: build(plan.postLayers),
      read: this.readExprs(plan),
      textIn: plan.fields.map((f) => textInExprs(this.pl, f.text)),
    };
    if (plan.sqlRules.length) {
      c.sqlQuery = `SELECT *, ${plan.sqlRules
        .map(([col, sql]) => `${sqlRule(sql)} AS ${quoteIdent(col)}`)
        .join(", ")} FROM batch`;
    }
    // Polars compiles SQL and regexes when a frame runs: run one row now, so a bad rule
    // fails here with its id rather than in the middle of a stream.
    try {
      this.evaluation(c, dryRunBatch(plan)).collectSync();
    } catch (err) {
      throw this.diagnose(c, err);
    }
    this.compiled.set(contract, c);
    return c;
  }

  private readExprs(plan: Plan): Compiled["read"] {
    const pl = this.pl;
    return {
      written: plan.supersedeBy ? pl.col(BAD_COL).not().and(pl.col(SUPERSEDED_COL).not()) : pl.col(BAD_COL).not(),
      ...(plan.supersedeBy ? { superseded: pl.col(SUPERSEDED_COL) } : {}),
      bad: pl.col(BAD_COL),
      badColumns: [pl.col("__ll_i"), pl.col(FAIL_COL)],
      counts: plan.checks.map((ch) => pl.col(ch.flag).cast(pl.Int64).sum().alias(ch.flag)),
      ...(plan.dataset.some((d) => d.rule.kind === "sql") ? {} : { kept: keptColumns(plan) }),
      typed:
        plan.outputs.length === 0
          ? []
          : [
              // Each field's typed column: the type the lake stores (see GoodColumns).
              ...plan.outputs.map((o, i) => pl.col(o.field.name).alias(`c${i}`)),
              ...(plan.keepsExtraKeys ? [pl.lit(null).cast(pl.Utf8).alias(`c${plan.outputs.length}`)] : []),
            ],
    };
  }

  /** The batch with all plan columns computed (coercion, sql rules, flags), as a plan to run. */
  private evaluation(c: Compiled, enc: EncodedBatch): LazyFrame {
    const pl = this.pl;
    let lf = this.typed(c, enc);
    if (c.sqlQuery) lf = pl.SQLContext({ batch: lf }).execute(c.sqlQuery, { eager: false }) as LazyFrame;
    for (const exprs of c.postLayers) lf = lf.withColumns(...exprs);
    return lf;
  }

  /** The batch's columns through coercion: what sql rules see. */
  private typed(c: Compiled, enc: EncodedBatch): LazyFrame {
    const pl = this.pl;
    const plan = c.plan;
    const series = [
      pl.Series("__ll_i", rowPositions(enc.n), pl.Int32),
      // Read only by the unknown-fields check: a Series costs ~0.5 µs per value even when all are null.
      ...(plan.tracksUnknown ? [pl.Series(UNKNOWN_COL, enc.unknown, pl.Utf8)] : []),
      ...plan.tagWords.map((name, w) => pl.Series(name, enc.tags[w]!, pl.Float64)),
    ];
    // All text: this plan does not ask for numbers as numbers (PlanOptions.numbersAsJson).
    let lf = withTextColumns(
      pl,
      series,
      plan.fields.map((f) => enc.columns[f.k] as Array<string | null>),
      c.textIn,
    );
    for (const exprs of c.layers) lf = lf.withColumns(...exprs);
    return lf;
  }

  private diagnose(c: Compiled, err: unknown): Error {
    const pl = this.pl;
    const one = pl.DataFrame([pl.Series("s", [""], pl.Utf8)]);
    for (const check of c.plan.checks) {
      const rule = check.rule;
      try {
        if (rule?.kind === "regex_match") one.select(c.compiler.expr({ op: "matches", e: { op: "col", name: "s" }, pattern: rule.pattern }));
        else if (rule?.kind === "sql") {
          pl.SQLContext({ batch: this.typed(c, dryRunBatch(c.plan)) }).execute(`SELECT ${sqlRule(rule.sql)} AS r FROM batch`, { eager: true });
        }
      } catch (ruleErr) {
        return new ConfigError(`rule ${check.ruleId}`, `does not compile on polars: ${(ruleErr as Error).message}`, {
          cause: ruleErr,
        });
      }
    }
    return new ConfigError("contract", `cannot be evaluated on polars: ${(err as Error).message}`, { cause: err });
  }

  private async run(c: Compiled, enc: EncodedBatch): Promise<EngineOutput> {
    const plan = c.plan;
    const read = c.read;
    // On Polars' own threads: the JavaScript thread meanwhile reads and encodes the next batch
    // and continues the lake's write of the previous one (collectSync held it for the whole run).
    const ev = await this.evaluation(c, enc).collect();

    const goodDf = (read.kept ? ev.select(...read.kept) : ev).filter(read.written);
    const goodCount = goodDf.height;
    const superseded = read.superseded ? (ev.filter(read.superseded).getColumn("__ll_i").toArray() as number[]) : undefined;
    // Read out of the frame only if the rows are asked for: a DuckDB lake reads the Parquet file.
    const goodColumns = () => plan.outputColumns.map((name) => goodDf.getColumn(name).toArray() as unknown[]);
    const typed = read.typed.length === 0 ? undefined : goodParquet(plan, goodDf, read.typed);

    const badDf = ev.filter(read.bad).select(...read.badColumns);
    const positions = badDf.getColumn("__ll_i").toArray() as number[];
    const fails = badDf.getColumn(FAIL_COL).toArray() as Array<string | null>;
    const bad = positions.map((pos, i) => ({ pos, codes: (fails[i] ?? "").split(",").map(Number) }));

    let counts: number[] = [];
    if (plan.checks.length) {
      // One row read at once: a Series wrapper per check costs about as much as an expression.
      counts = (ev.select(...read.counts).row(0) as Array<number | bigint | null>).map((n) => Number(n ?? 0));
    }
    // A measure that throws is reported as its rule failing; the rows stand.
    const datasetErrors: Array<string | undefined> = [];
    const dataset = plan.dataset.map((d, i) => {
      try {
        return polarsMeasure(this.pl, goodDf, d);
      } catch (err) {
        datasetErrors[i] = engineMessage(err);
        return 0;
      }
    });
    return { goodColumns, bad, counts, goodCount, dataset, datasetErrors, ...(superseded ? { superseded } : {}), ...(typed ? { typed } : {}) };
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
