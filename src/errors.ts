/**
 * Base class of every error LakeLogic throws on purpose. Each subclass carries a
 * stable `code` so callers (and the CLI) can branch without parsing messages.
 */
export class LakeLogicError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A user-supplied option or configuration value is wrong. Says which one and what was expected. */
export class ConfigError extends LakeLogicError {
  readonly option: string;
  constructor(option: string, message: string, options?: { cause?: unknown }) {
    super("CONFIG", `${option}: ${message}`, options);
    this.option = option;
  }
}

/** An optional peer dependency is not installed. */
export class MissingDependencyError extends LakeLogicError {
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
