import { NonRetriableError } from "../errors.js";

/** One thing wrong with a contract, located as precisely as the input allows. */
export interface ContractProblem {
  /** Key path, e.g. `quality.row_rules[2].regex_match.pattern`; empty for file-level problems. */
  path: string;
  /** What is wrong. */
  message: string;
  /** What would have been accepted. */
  expected?: string;
  file?: string;
  /** 1-based; absent when the contract was given as an object. */
  line?: number;
  column?: number;
}

/** `bronze.yaml:14:7 quality.row_rules[2].regex_match.pattern: <what>; expected <what>` */
export function formatProblem(p: ContractProblem): string {
  let where = "";
  if (p.line !== undefined) where = `${p.file ?? "<contract>"}:${p.line}:${p.column ?? 1}`;
  else if (p.file !== undefined) where = p.file;
  const head = [where, p.path ? `${p.path}:` : ""].filter((s) => s !== "").join(" ");
  const body = p.expected ? `${p.message}; expected ${p.expected}` : p.message;
  return head === "" ? body : `${head} ${body}`;
}

/**
 * A contract could not be loaded. `problems` lists everything found (sorted by position); the
 * top-level `file`/`line`/`column`/`path` and the first line of the message describe the first one.
 */
export class ContractError extends NonRetriableError {
  readonly file?: string;
  readonly line?: number;
  readonly column?: number;
  readonly path: string;
  readonly problems: readonly ContractProblem[];

  constructor(problems: readonly ContractProblem[], options?: { cause?: unknown }) {
    const list = problems.length > 0 ? problems : [{ path: "", message: "invalid contract" }];
    super("CONTRACT", list.map(formatProblem).join("\n"), options);
    const first = list[0]!;
    this.file = first.file;
    this.line = first.line;
    this.column = first.column;
    this.path = first.path;
    this.problems = list;
  }
}
