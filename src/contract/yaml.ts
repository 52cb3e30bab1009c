import { isMap, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type Node } from "yaml";

/**
 * The largest contract accepted, in bytes of UTF-8. Real contracts are kilobytes; 20,000 fields
 * of a few lines each take under 2 MiB. Parsing takes roughly 150 bytes of memory per byte of
 * input, so the limit bounds what a hostile file can cost.
 */
export const MAX_CONTRACT_BYTES = 4 * 1024 * 1024;

/**
 * How often aliases may be expanded, as the yaml package counts it (`maxAliasCount`): for each
 * anchor, the times it is used multiplied by the expansions nested inside it. Refuses "billion
 * laughs" documents, whose nested aliases expand to gigabytes.
 */
export const MAX_YAML_ALIAS_COUNT = 100;

/** A position in a YAML file, 1-based, as editors show it. */
export interface YamlPos {
  line: number;
  column: number;
}

export interface YamlSyntaxProblem {
  message: string;
  /** True when the document may be valid YAML but breaks a size or alias limit. */
  limit?: boolean;
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

/** The message for a contract over `MAX_CONTRACT_BYTES`. */
export function contractSizeMessage(bytes: number): string {
  return `the contract is ${bytes} bytes, over the limit of ${MAX_CONTRACT_BYTES} bytes (${MAX_CONTRACT_BYTES / 1024 / 1024} MiB)`;
}

/** Position of the first alias (`*name`, or the first alias to `name` when given). */
function firstAlias(doc: Document, name?: string): number | undefined {
  let offset: number | undefined;
  visit(doc, {
    Alias(_key, node) {
      if (name !== undefined && node.source !== name) return undefined;
      offset = node.range?.[0];
      return visit.BREAK;
    },
  });
  return offset;
}

/**
 * The document as plain JS, or the problem that stopped it: the yaml package throws (instead of
 * reporting) for an alias without its anchor and for aliases over `maxAliasCount`.
 */
function toData(doc: Document, toPos: (offset: number) => YamlPos): { data?: unknown; problem?: YamlSyntaxProblem } {
  try {
    return { data: doc.toJS({ maxAliasCount: MAX_YAML_ALIAS_COUNT }) };
  } catch (e) {
    const raw = e instanceof Error ? e.message : String(e);
    const unresolved = /^Unresolved alias[^:]*: (.*)$/.exec(raw);
    if (unresolved) {
      const pos = toPos(firstAlias(doc, unresolved[1]) ?? 0);
      return { problem: { message: `alias *${unresolved[1]} has no anchor &${unresolved[1]} before it`, ...pos } };
    }
    const pos = toPos(firstAlias(doc) ?? 0);
    if (/alias count/i.test(raw)) {
      const message = `aliases expand too often (a contract may expand them at most ${MAX_YAML_ALIAS_COUNT} times, nested uses multiplied)`;
      return { problem: { message, limit: true, ...pos } };
    }
    // The yaml package reports deep nesting itself; anything else it throws is still this file's problem.
    return { problem: { message: `cannot read the document: ${raw}`, ...pos } };
  }
}

export function parseYaml(text: string, file?: string): YamlDoc {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_CONTRACT_BYTES) {
    const problem = { message: contractSizeMessage(bytes), limit: true, line: 1, column: 1 };
    return { file, data: undefined, errors: [problem], locate: () => undefined, scalarSource: () => undefined };
  }
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

  if (errors.length > 0) return { file, data: undefined, errors, locate, scalarSource };
  const { data, problem } = toData(doc, toPos);
  return { file, data, errors: problem ? [problem] : [], locate, scalarSource };
}
