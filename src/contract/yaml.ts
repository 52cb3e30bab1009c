import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node } from "yaml";

/** A position in a YAML file, 1-based, as editors show it. */
export interface YamlPos {
  line: number;
  column: number;
}

export interface YamlSyntaxProblem {
  message: string;
  line: number;
  column: number;
}

export type YamlPath = ReadonlyArray<string | number>;

/**
 * A parsed YAML document that remembers where every key and value came from, so that the
 * contract loader and the linter can both point at `file:line:col` for any key path.
 */
export interface YamlDoc {
  file?: string;
  /** Plain JS value of the document (undefined for an empty file). */
  data: unknown;
  /** Syntax errors; when non-empty, `data` must not be trusted. */
  errors: YamlSyntaxProblem[];
  /** Position of the key at `path` (or of the value when it has no key, e.g. a list item). */
  locate(path: YamlPath): YamlPos | undefined;
  /** Source text of the scalar value at `path` as written (`1.0` stays `1.0`), if it is a scalar. */
  scalarSource?(path: YamlPath): string | undefined;
}

export function formatPath(path: YamlPath): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? part : `.${part}`;
  }
  return out === "" ? "<root>" : out;
}

export function parseYaml(text: string, file?: string): YamlDoc {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const toPos = (offset: number): YamlPos => {
    const p = lineCounter.linePos(offset);
    return { line: p.line, column: p.col };
  };
  const errors: YamlSyntaxProblem[] = doc.errors.map((e) => {
    const pos = toPos(e.pos[0]);
    // The yaml package appends "at line L, column C:" plus a code frame; keep the first sentence.
    const message = (e.message.split("\n")[0] ?? e.message).replace(/ at line \d+, column \d+:?$/, "");
    return { message, ...pos };
  });

  const locate = (path: YamlPath): YamlPos | undefined => {
    let node: unknown = doc.contents;
    let best: YamlPos | undefined = node && (node as Node).range ? toPos((node as Node).range![0]) : undefined;
    for (const part of path) {
      if (isMap(node)) {
        const pair = node.items.find((it) => isScalar(it.key) && String(it.key.value) === String(part));
        if (!pair) return best;
        const keyNode = pair.key as Node;
        if (keyNode.range) best = toPos(keyNode.range[0]);
        node = pair.value;
      } else if (isSeq(node) && typeof part === "number") {
        const item = node.items[part] as Node | undefined;
        if (!item) return best;
        if (item.range) best = toPos(item.range[0]);
        node = item;
      } else {
        return best;
      }
    }
    return best;
  };

  const scalarSource = (path: YamlPath): string | undefined => {
    let node: unknown = doc.contents;
    for (const part of path) {
      if (isMap(node)) {
        const pair = node.items.find((it) => isScalar(it.key) && String(it.key.value) === String(part));
        if (!pair) return undefined;
        node = pair.value;
      } else if (isSeq(node) && typeof part === "number") {
        node = node.items[part];
      } else {
        return undefined;
      }
    }
    if (!isScalar(node) || !node.range) return undefined;
    return text.slice(node.range[0], node.range[1]);
  };

  const data: unknown = errors.length === 0 ? doc.toJS({ maxAliasCount: 100 }) : undefined;
  return { file, data, errors, locate, scalarSource };
}
