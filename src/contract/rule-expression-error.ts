import { NonRetriableError } from "../errors.js";

/** A rule expression was rejected. `offset` is the 0-based position of `token` in `sql`. */
export class RuleExpressionError extends NonRetriableError {
  readonly sql: string;
  readonly token?: string;
  readonly offset?: number;
  /** The bare problem, without the expression quoted (the contract loader adds its own location). */
  readonly reason: string;
  constructor(sql: string, reason: string, token?: string, offset?: number) {
    const at = offset === undefined ? "" : ` (at offset ${offset})`;
    super("RULE_EXPRESSION", `rule expression rejected${at}: ${reason}. Expression: ${sql}`);
    this.sql = sql;
    this.reason = reason;
    this.token = token;
    this.offset = offset;
  }
}
