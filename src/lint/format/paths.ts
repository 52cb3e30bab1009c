import { isAbsolute, relative, resolve, sep } from "node:path";

/**
 * `file` relative to `root` with forward slashes, as code-scanning and annotation consumers
 * expect; undefined when it lies outside `root` (those need an absolute URI instead).
 */
export function repoRelativePath(file: string, root: string): string | undefined {
  const rel = relative(resolve(root), resolve(root, file));
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return undefined;
  return rel.split(sep).join("/");
}
