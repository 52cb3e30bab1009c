/**
 * What every section reader shares while one contract is normalised: the problems and warnings
 * found so far, where a key path sits in the YAML, and the declared fields rules refer to.
 */
import type { ContractProblem } from "../errors.js";
import { RuleExpressionError, checkRuleExpression } from "../sql-guard.js";
import { didYouMean } from "../suggest.js";
import type { ContractWarning, SourceLoc } from "../types.js";
import { formatPath, type YamlDoc, type YamlPath, type YamlPos } from "../yaml.js";

export class NormaliseContext {
  readonly problems: ContractProblem[] = [];
  readonly warnings: ContractWarning[] = [];
  private names: string[] = [];
  private byLower = new Map<string, string>();

  constructor(
    readonly file: string | undefined,
    readonly doc: YamlDoc | undefined,
    /** Values the contract inherited (formatted key path → where they were written). */
    private readonly origins?: ReadonlyMap<string, { file: string; pos?: YamlPos }>,
  ) {}

  /** Where an inherited value at `path` (or above it) was written, if it was inherited. */
  private inherited(path: YamlPath): { file: string; pos?: YamlPos } | undefined {
    if (!this.origins || this.origins.size === 0) return undefined;
    for (let n = path.length; n > 0; n--) {
      const hit = this.origins.get(formatPath(path.slice(0, n)));
      if (hit) return hit;
    }
    return undefined;
  }

  loc(path: YamlPath): SourceLoc | undefined {
    const from = this.inherited(path);
    if (from) return from.pos ? { file: from.file, line: from.pos.line, column: from.pos.column, path: formatPath(path) } : undefined;
    const pos = this.doc?.locate(path);
    if (!pos) return undefined;
    return { file: this.file, line: pos.line, column: pos.column, path: formatPath(path) };
  }

  error(path: YamlPath, message: string, expected?: string): void {
    const from = this.inherited(path);
    // An empty document has no node to point at: its problems are at the start of the file.
    const pos = from ? from.pos : this.doc ? (this.doc.locate(path) ?? { line: 1, column: 1 }) : undefined;
    this.problems.push({
      path: path.length === 0 ? "" : formatPath(path),
      message,
      expected,
      file: from ? from.file : this.file,
      line: pos?.line,
      column: pos?.column,
    });
  }

  /** Forget the problems at exactly `path` whose message starts with `prefix` (a more precise one replaces them). */
  dropProblems(path: YamlPath, prefix: string): void {
    const at = path.length === 0 ? "" : formatPath(path);
    for (let i = this.problems.length - 1; i >= 0; i--) {
      const p = this.problems[i]!;
      if (p.path === at && p.message.startsWith(prefix)) this.problems.splice(i, 1);
    }
  }

  warn(path: YamlPath, message: string, code: ContractWarning["code"]): void {
    const loc = this.loc(path);
    const where = path.length === 0 ? "" : `${formatPath(path)}: `;
    this.warnings.push({ message: `${where}${message}`, loc, code });
  }

  // ── field references ──

  setFields(names: string[]): void {
    this.names = names;
    this.byLower = new Map(names.map((n) => [n.toLowerCase(), n]));
  }

  /** The declared field names, in file order (empty until the model is read, or when it has none). */
  get fieldNames(): readonly string[] {
    return this.names;
  }

  /** The declared spelling of a field named case-insensitively, or undefined when there is none. */
  declaredField(name: string): string | undefined {
    return this.byLower.get(name.toLowerCase());
  }

  /** Resolve a field reference case-insensitively to the declared spelling; error when unknown. */
  fieldRef(name: string, path: YamlPath): string {
    if (this.names.length === 0) return name;
    const hit = this.byLower.get(name.toLowerCase());
    if (hit !== undefined) return hit;
    this.error(path, notAFieldMessage(name, this.names), `one of the fields under model.fields: ${this.names.join(", ")}`);
    return name;
  }

  checkSql(sql: string, path: YamlPath): void {
    try {
      checkRuleExpression(sql, { fields: this.names });
    } catch (e) {
      if (!(e instanceof RuleExpressionError)) throw e;
      this.error(path, e.reason, "a boolean SQL expression over the contract's fields (see docs/contracts.md, Rule expressions)");
    }
  }
}

/** `'x' is not a field of this contract (did you mean y?)`. */
export function notAFieldMessage(name: string, fieldNames: readonly string[]): string {
  const guess = didYouMean(name, fieldNames);
  return `'${name}' is not a field of this contract${guess !== undefined ? ` (did you mean ${guess}?)` : ""}`;
}
