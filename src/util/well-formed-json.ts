/**
 * JSON text DuckDB's JSON type accepts: JSON.stringify writes a lone surrogate as a `\udXXX`
 * escape (and only a lone one: pairs stay raw characters), which DuckDB refuses; each becomes
 * `\ufffd`, as lone surrogates in strings do. Escaped backslashes are skipped, so text that
 * merely reads "\ud800" stays as it is. Used by the engines for json fields' values and by the
 * lake for everything it stores as JSON.
 */
export function wellFormedJson(text: string): string {
  return text.includes("\\ud") ? text.replace(ESCAPED_SURROGATE, (m) => (m === "\\\\" ? m : "\\ufffd")) : text;
}

const ESCAPED_SURROGATE = /\\\\|\\u[dD][89a-fA-F][0-9a-fA-F]{2}/g;
