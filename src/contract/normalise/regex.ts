/** Whether a rule's regular expression can run on the engines, checked when the contract loads. */

/**
 * Why a pattern is unusable, or undefined. Engines evaluate patterns with RE2 (DuckDB) or Rust's
 * regex (Polars), which have no look-around or backreferences: refuse those here, not mid-stream.
 */
export function regexProblem(pattern: string): string | undefined {
  if (/\(\?<?[=!]/.test(pattern)) return "look-around ((?=…), (?!…), (?<=…), (?<!…)) is not supported by the engines";
  if (/(^|[^\\])(\\\\)*\\[1-9]/.test(pattern) || /\\k</.test(pattern)) return "backreferences are not supported by the engines";
  // RE2 spellings JavaScript lacks: (?P<name>…) groups and leading inline flags.
  let js = pattern.replace(/\(\?P</g, "(?<");
  let flags = "";
  const inline = /^\(\?([imsU]+)\)/.exec(js);
  if (inline) {
    js = js.slice(inline[0].length);
    flags = [...new Set(inline[1]!.replace(/U/g, "").split(""))].join("");
  }
  try {
    new RegExp(js, flags);
    return undefined;
  } catch (e) {
    const msg = e instanceof Error ? e.message.replace(/^Invalid regular expression: /, "") : String(e);
    return `invalid regular expression: ${msg}`;
  }
}
