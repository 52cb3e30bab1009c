import { formatPath, type YamlPath } from "../../contract/yaml.js";
import { isCredentialName, isLiteral, literalSecrets, referenceHint } from "../../sources/core/secret-literal.js";
import type { ComponentSpec } from "../../sources/core/spec.js";
import { sourceSpecs } from "../../sources/registry.js";
import { isMapping, type RawContract } from "../raw.js";
import type { ContractRule, RuleHit } from "../types.js";

/** How deep below `source:` credential fields are looked for (`source.options.sasl.password`). */
const MAX_DEPTH = 4;

/** A literal secret found under `source`, with the words its variable is named after. */
interface Found {
  path: YamlPath;
  parts: string[];
  value: unknown;
}

/** Any credential-named key with a literal value, at any depth: also types and keys no spec declares. */
function byName(node: Record<string, unknown>, path: YamlPath, parts: string[], out: Found[], depth = 0): void {
  for (const [key, value] of Object.entries(node)) {
    // `options` only groups keys (the Python form); it is not part of a variable's name.
    const next = key === "options" ? parts : [...parts, key];
    if (isCredentialName(key) && isLiteral(value)) out.push({ path: [...path, key], parts: next, value });
    else if (isMapping(value) && depth < MAX_DEPTH) byName(value, [...path, key], next, out, depth + 1);
  }
}

/** What the source's spec declares secret (an option whose name alone would not say so). */
function bySpec(spec: ComponentSpec, name: string, node: Record<string, unknown>, path: YamlPath, out: Found[]): void {
  for (const literal of literalSecrets(spec, node)) {
    const value = literal.path.reduce<unknown>((v, k) => (isMapping(v) ? v[k] : undefined), node);
    out.push({ path: [...path, ...literal.path], parts: [name, ...literal.path.filter((k) => k !== "options")], value });
  }
}

function findLiterals(contract: RawContract): Found[] {
  const source = contract.get(["source"]);
  if (!isMapping(source)) return [];
  const type = typeof source["type"] === "string" ? source["type"].trim().toLowerCase() : "";
  const options = source["options"];
  const kind = isMapping(options) && typeof options["kind"] === "string" ? options["kind"].trim().toLowerCase() : undefined;
  const found: Found[] = [];
  // Variables are named after the transport: `kind` under the generic `type: stream` (KAFKA_…, EVENTHUBS_…).
  const name = kind ?? (type || "source");
  const spec = sourceSpecs().find((s) => s.type === type);
  if (spec) {
    const { type: _type, ...rest } = source;
    bySpec(spec, name, rest, ["source"], found);
    if (isMapping(options)) bySpec(spec, name, options, ["source", "options"], found);
  }
  byName(source, ["source"], [name], found);
  const seen = new Set<string>();
  return found.filter((f) => {
    const key = formatPath(f.path);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

export const secret001: ContractRule = {
  id: "SECRET-001",
  severity: "critical",
  name: "LiteralSecretInSource",
  title: "Secret written into the source block",
  description:
    "A password, connection string, access key, token, HMAC secret or credential header (Authorization, " +
    "X-Api-Key, Cookie, …) written as a literal value in `source:`. A contract is committed, reviewed and " +
    "copied into workflow histories, so a secret in it leaks; `lakelogic run`, `createSource` and the " +
    "Temporal worker refuse such a config. The option the source declares secret and any key named like a " +
    "credential are checked; `env:NAME`, or `${ENV:NAME}` inside a string, is what they accept.",
  fix:
    "Write `env:NAME` (or `${ENV:NAME}` inside a string, e.g. `Bearer ${ENV:FEED_TOKEN}`) and set that " +
    "environment variable where the source runs (on Temporal, the worker).",
  tags: ["security", "secrets", "source"],
  scope: "contract",
  examples: {
    bad: `dataset: rides
primary_key: [ride_id]
source:
  type: stream
  options:
    kind: kafka
    brokers: env:KAFKA_BROKERS
    topic: rides
    sasl_username: rides-reader
    sasl_password: hunter2
materialization:
  strategy: merge
`,
    good: `dataset: rides
primary_key: [ride_id]
source:
  type: stream
  options:
    kind: kafka
    brokers: env:KAFKA_BROKERS
    topic: rides
    sasl_username: rides-reader
    sasl_password: env:KAFKA_SASL_PASSWORD
materialization:
  strategy: merge
`,
  },
  check(contract) {
    return findLiterals(contract).map(
      (f): RuleHit => ({
        message:
          `${formatPath(f.path)} holds a secret written as a literal: a contract is stored and shared, ` +
          `so the run refuses it.`,
        suggestion: `Write "${referenceHint(f.parts, f.value)}" (or \${ENV:NAME} inside a string) and set that variable where the source runs.`,
        path: f.path,
      }),
    );
  },
};
