import { didYouMean } from "../../contract/suggest.js";
import { ConfigError } from "../../errors.js";

/**
 * Refuse an option object with a key that `known` does not list — a misspelt option would
 * otherwise be ignored without a word (`batch_size` where `batchSize` was meant, a Python
 * option name). The error names the component and the key, suggests the closest known key,
 * and lists them all. `undefined` values count too: `{ cursor_fn: undefined }` is still a typo.
 */
export function refuseUnknownOptions(
  component: string,
  options: object | undefined,
  known: readonly string[],
  /** Hints for names that are no typo of a known one (e.g. the Python package's): name → advice. */
  renamed: Readonly<Record<string, string>> = {},
): void {
  if (options === undefined || options === null || typeof options !== "object") return;
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const close = didYouMean(key, known);
    const hint = Object.hasOwn(renamed, key) ? `; ${renamed[key]}.` : close ? `; did you mean "${close}"?` : ".";
    throw new ConfigError(`${component}: ${key}`, `unknown option${hint} Known options: ${[...known].sort().join(", ")}`);
  }
}

/**
 * Declare the option names of an options interface, checked by the compiler both ways: a name
 * that is not a key of `T` fails, and so does leaving a key of `T` out — so the list that
 * `refuseUnknownOptions` checks against cannot fall behind the interface.
 *
 *   const KNOWN = optionNames<MyOptions>()(["a", "b"]);
 */
export function optionNames<T>() {
  return <const K extends ReadonlyArray<keyof T & string>>(
    names: K & ([Exclude<keyof T, K[number]>] extends [never] ? unknown : { missing: Exclude<keyof T, K[number]> }),
  ): readonly string[] => names;
}
