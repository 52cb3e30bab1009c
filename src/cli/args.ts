import { parseArgs, type ParseArgsConfig } from "node:util";
import { didYouMean } from "../contract/suggest.js";
import { UsageError } from "./types.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

/**
 * `node:util` parseArgs, strict, with its errors turned into UsageError (exit 2) and the
 * message cut to its first sentence (the rest is advice about `--` that rarely applies).
 */
export type ParsedCommandArgs<O extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>
>;

export function parseCommandArgs<O extends Options>(args: string[], options: O): ParsedCommandArgs<O> {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS")) {
      const message = err instanceof Error ? err.message : String(err);
      throw new UsageError((message.split(/\.\s/)[0] ?? message).replace(/\.$/, "") + unknownOptionHint(code, message, options));
    }
    throw err;
  }
}

/** ` (did you mean --fail-on?)` for a misspelt flag, else empty. */
function unknownOptionHint(code: string, message: string, options: Options): string {
  if (code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION") return "";
  const given = /'(--?[^'=]+)/.exec(message)?.[1];
  if (given === undefined || !given.startsWith("--")) return "";
  const guess = didYouMean(given.slice(2), Object.keys(options));
  return guess === undefined ? "" : ` (did you mean --${guess}?)`;
}

/** A string option restricted to `allowed`. */
export function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`${flag} must be one of ${allowed.join(", ")} (got "${value}")`);
}
