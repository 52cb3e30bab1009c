import type { Finding } from "../types.js";

/** Rebuild each finding in the documented key order, whatever order it was built in. */
export function orderedFinding(f: Finding): Finding {
  return {
    id: f.id,
    severity: f.severity,
    file: f.file,
    line: f.line,
    ...(f.column === undefined ? {} : { column: f.column }),
    ...(f.path === undefined ? {} : { path: f.path }),
    message: f.message,
    suggestion: f.suggestion,
  };
}

/** A JSON array of findings with a stable key order (id, severity, file, line, column, path, message, suggestion). */
export function formatJson(findings: readonly Finding[]): string {
  return JSON.stringify(findings.map(orderedFinding), null, 2) + "\n";
}
