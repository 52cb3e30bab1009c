/**
 * Base class of every error LakeLogic throws on purpose. Each subclass carries a stable `code`
 * so callers (and the CLI) can branch without parsing messages, and says whether a retry can
 * help (`retriable`): as kafkajs' errors do, an error is retriable unless its class extends
 * NonRetriableError (or, where it depends on the case, the constructor says). The Temporal
 * activities turn an error that cannot be retried into a non-retryable failure, and everything
 * else is retried with backoff.
 */
export class LakeLogicError extends Error {
  readonly code: string;
  /** Whether trying the same thing again may succeed (a network blip, a busy lock) or cannot (a bad contract). */
  readonly retriable: boolean;
  constructor(code: string, message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = options.retriable ?? true;
  }
}

/** An error a retry cannot fix (a bad contract, a rival writer, a missing package): the class says so. */
export class NonRetriableError extends LakeLogicError {
  constructor(code: string, message: string, options: { cause?: unknown } = {}) {
    super(code, message, { ...options, retriable: false });
  }
}

/** A user-supplied option or configuration value is wrong. Says which one and what was expected. */
export class ConfigError extends NonRetriableError {
  readonly option: string;
  /** What is wrong with it, without the option's name. */
  readonly detail: string;
  constructor(option: string, message: string, options?: { cause?: unknown }) {
    super("CONFIG", `${option}: ${message}`, options);
    this.option = option;
    this.detail = message;
  }
}

/** An optional peer dependency is not installed. */
export class MissingDependencyError extends NonRetriableError {
  readonly packageName: string;
  constructor(packageName: string, feature: string, options?: { cause?: unknown }) {
    super(
      "MISSING_DEPENDENCY",
      `${feature} needs the optional package "${packageName}". Install it with: npm install ${packageName}`,
      options,
    );
    this.packageName = packageName;
  }
}

/** Whether a retry may help with `err`: a LakeLogicError says; anything else may be transient. */
export function isRetriable(err: unknown): boolean {
  return err instanceof LakeLogicError ? err.retriable : true;
}

/**
 * A value cannot be written as JSON: it refers to itself, or it is nested deeper than the writer
 * goes (which keeps the writer's recursion far from the stack's limit). Writing it again fails
 * the same way.
 */
export class JsonValueError extends NonRetriableError {
  constructor(message: string) {
    super("JSON_VALUE", message);
  }
}
