/**
 * `regex_match` patterns run on RE2 (DuckDB) and on Rust's regex crate (Polars). The two
 * agree on syntax and on matching, except that Rust's Perl classes and word boundaries are
 * Unicode-aware (`\d` matches "٣") while RE2's are ASCII. We pin the RE2 meaning by
 * rewriting those escapes to explicit ASCII classes for Polars.
 */

const OUTSIDE: Record<string, string> = {
  d: "[0-9]",
  D: "[^0-9]",
  w: "[0-9A-Za-z_]",
  W: "[^0-9A-Za-z_]",
  s: "[\\t\\n\\f\\r ]",
  S: "[^\\t\\n\\f\\r ]",
  b: "(?-u:\\b)",
  B: "(?-u:\\B)",
};
/** Inside `[...]` only the positive classes have a splice-in form. */
const INSIDE: Record<string, string> = { d: "0-9", w: "0-9A-Za-z_", s: "\\t\\n\\f\\r " };

export function toRustRegex(pattern: string): string {
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\" && i + 1 < pattern.length) {
      const n = pattern[i + 1]!;
      const rep = inClass ? INSIDE[n] : OUTSIDE[n];
      out += rep ?? c + n;
      i++;
      continue;
    }
    if (!inClass && c === "[") {
      inClass = true;
      out += c;
      // A `]` right after `[` or `[^` is a literal member, not the end.
      if (pattern[i + 1] === "^") out += pattern[++i];
      if (pattern[i + 1] === "]") out += pattern[++i];
      continue;
    }
    if (inClass && c === "]") inClass = false;
    out += c;
  }
  return out;
}
