/**
 * Every relative link and anchor in README.md and docs/*.md resolves: the file exists and, for
 * `#anchor`, a heading of the target produces that anchor under GitHub's rules.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";

const PAGES = ["README.md", ...readdirSync("docs").filter((f) => f.endsWith(".md")).map((f) => join("docs", f))];

/** The text with fenced code blocks blanked (line numbers kept) and inline code removed. */
function prose(text: string): string[] {
  let fence: string | undefined;
  return text.split("\n").map((line) => {
    const open = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (fence !== undefined) {
      if (open !== undefined && open[0] === fence[0] && open.length >= fence.length) fence = undefined;
      return "";
    }
    if (open !== undefined) {
      fence = open;
      return "";
    }
    return line.replace(/(`+)[\s\S]*?\1/g, "");
  });
}

/** GitHub's heading anchor: lowercase, punctuation dropped (but - and _), spaces to -. */
export function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link keeps its text
    .replace(/<[^>]+>/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a page: its headings (duplicates numbered -1, -2, …) and explicit ids. */
function anchors(file: string): Set<string> {
  const text = readFileSync(file, "utf8");
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of text.split("\n")) {
    const open = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (fence !== undefined) {
      if (open !== undefined && open[0] === fence[0] && open.length >= fence.length) fence = undefined;
      continue;
    }
    if (open !== undefined) {
      fence = open;
      continue;
    }
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      // Inline code keeps its text in the anchor, without the backticks.
      const base = slug(heading.replace(/`/g, ""));
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      out.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(m[1]!);
  }
  return out;
}

interface Link {
  page: string;
  line: number;
  target: string;
  /** The link's text, for inline links. */
  text?: string;
}

function links(page: string): Link[] {
  const out: Link[] = [];
  prose(readFileSync(page, "utf8")).forEach((text, i) => {
    for (const m of text.matchAll(/\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ page, line: i + 1, target: m[2]!, text: m[1]! });
    const ref = /^\s*\[[^\]]+\]:\s*(\S+)/.exec(text);
    if (ref) out.push({ page, line: i + 1, target: ref[1]! });
    for (const m of text.matchAll(/<a\s[^>]*href="([^"]+)"/g)) out.push({ page, line: i + 1, target: m[1]! });
  });
  return out;
}

/** Why a link does not resolve, or undefined. */
function problem(link: Link): string | undefined {
  const { target } = link;
  // `[connectors.md#kafka](docs/connectors.md)` promises a section and lands at the top of the page.
  const promised = link.text === undefined ? undefined : /^([\w./-]+\.md)#([\w-]+)$/.exec(link.text);
  if (promised && !target.endsWith(`${promised[1]}#${promised[2]}`)) return `the text names ${link.text} but the link goes to ${target}`;
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) return undefined; // external
  const hash = target.indexOf("#");
  const path = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file = path === "" ? link.page : normalize(join(dirname(link.page), path));
  if (!existsSync(file)) return `${file} does not exist`;
  if (anchor === undefined || anchor === "") return undefined;
  if (statSync(file).isDirectory() || !file.endsWith(".md")) return undefined;
  return anchors(file).has(anchor) ? undefined : `${file} has no heading with the anchor #${anchor}`;
}

describe("documentation links", () => {
  it("computes anchors as GitHub does", () => {
    expect(slug("Stream: Kafka and Event Hubs (in the Python form)")).toBe("stream-kafka-and-event-hubs-in-the-python-form");
    expect(slug("The `lakelogic` command")).toBe("the-lakelogic-command");
    expect(slug("LOAD-001: Contract the loader refuses")).toBe("load-001-contract-the-loader-refuses");
    expect(slug("What's new — v2.0")).toBe("whats-new--v20");
    expect(slug("snake_case keys")).toBe("snake_case-keys");
  });

  it("finds every page", () => {
    expect(PAGES).toContain("README.md");
    expect(PAGES).toContain(join("docs", "cli.md"));
  });

  it("resolve: every relative link's file exists and every anchor names a heading", () => {
    const broken = PAGES.flatMap((page) => links(page).map((l) => ({ l, why: problem(l) })))
      .filter((x) => x.why !== undefined)
      .map(({ l, why }) => `${l.page}:${l.line} ${l.target}: ${why}`);
    expect(broken).toEqual([]);
  });
});
