import { ConfigError } from "../../errors.js";
import { loadPeer } from "../../util/peer.js";
import { didYouMean } from "../../contract/suggest.js";
import { literalSecrets } from "./secret-literal.js";

/**
 * Every connector declares its options once, as data. Validation of user config (from code, a
 * contract's `source:` block or a Temporal workflow's JSON input) and the reference docs are both
 * derived from that declaration, so they cannot drift apart.
 */
export type OptionType = "string" | "number" | "integer" | "boolean" | "string[]" | "object" | "any";

export interface OptionSpec {
  type: OptionType;
  description: string;
  required?: boolean;
  default?: unknown;
  /** Allowed values for strings. */
  enum?: readonly string[];
  min?: number;
  max?: number;
  /** Never echoed back in messages or docs examples. */
  secret?: boolean;
  /**
   * For an object whose keys are themselves declared options (a nested block such as the
   * `type: stream` `options:`): their declarations, so the secret checks of a JSON config reach
   * into it.
   */
  fields?: Readonly<Record<string, OptionSpec>>;
}

export interface ComponentSpec {
  /** The `type` in a JSON source config, e.g. `kafka`. */
  type: string;
  /** `cursor`: replayable position; `ack`: acknowledged queue; `push`: no cursor, bounded buffer. */
  kind: "cursor" | "ack" | "push";
  summary: string;
  /** The optional peer package the connector needs. */
  peerDependency?: string;
  options: Readonly<Record<string, OptionSpec>>;
  /** Extra cross-field checks, returning a message for the first problem. */
  check?: (options: Record<string, unknown>) => { option: string; message: string } | undefined;
}

/** The TypeScript type of one declared option's value. */
type ValueOf<O extends OptionSpec> = O["type"] extends "string"
  ? O["enum"] extends readonly (infer E extends string)[]
    ? E
    : string
  : O["type"] extends "number" | "integer"
    ? number
    : O["type"] extends "boolean"
      ? boolean
      : O["type"] extends "string[]"
        ? string[]
        : O["type"] extends "object"
          ? Record<string, unknown>
          : unknown;

/** Options that parseOptions always fills: required ones and those with a default. */
type FilledKeys<T extends Record<string, OptionSpec>> = {
  [K in keyof T]: T[K] extends { required: true } ? K : T[K] extends { default: NonNullable<unknown> } ? K : never;
}[keyof T];

/**
 * The options object a spec describes, as parseOptions returns it: declare the options once
 * (`const spec = {...} as const satisfies ComponentSpec`) and derive the type with
 * `type MyOptions = OptionsOf<typeof spec>`.
 */
export type OptionsOf<S extends { options: Record<string, OptionSpec> }> = {
  -readonly [K in FilledKeys<S["options"]>]: ValueOf<S["options"][K]>;
} & {
  -readonly [K in Exclude<keyof S["options"], FilledKeys<S["options"]>>]?: ValueOf<S["options"][K]>;
};

/** Options a caller must give: the required ones. */
type RequiredKeys<T extends Record<string, OptionSpec>> = {
  [K in keyof T]: T[K] extends { required: true } ? K : never;
}[keyof T];

/**
 * The options object a caller passes in code (`new SQSConnector({...})`): like OptionsOf, but
 * an option with a default may be left out.
 */
export type OptionsInput<S extends { options: Record<string, OptionSpec> }> = {
  -readonly [K in RequiredKeys<S["options"]>]: ValueOf<S["options"][K]>;
} & {
  -readonly [K in Exclude<keyof S["options"], RequiredKeys<S["options"]>>]?: ValueOf<S["options"][K]>;
};

const camel = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** Where `env:NAME` and `${ENV:NAME}` references are looked up. */
export type Environment = Readonly<Record<string, string | undefined>>;

export interface ParseContext {
  /**
   * `config`: the options come from a JSON config (a contract's `source:` block, `lakelogic run
   * --source`, a Temporal input), which is stored and shared, so a secret option must be a
   * reference. `code` (the default): a program passing values it read itself.
   */
  origin?: "code" | "config";
}

/**
 * Validate `input` against `spec`: snake_case keys are accepted as their camelCase twins,
 * defaults are applied, and every problem names the option and what was expected.
 *
 * Secrets by reference: a string value `env:NAME`, or `${ENV:NAME}` inside one, is replaced by
 * that environment variable (of the process parsing, e.g. the Temporal worker), for scalar and
 * list options and for the string values of objects declared `secret` (such as `headers`). The
 * caller's `input` keeps the reference, so the secret never enters a workflow's history. With
 * `origin: "config"` a secret written as a literal is refused (see `secret-literal.ts`).
 */
export function parseOptions<S extends ComponentSpec>(
  spec: S,
  input: Record<string, unknown>,
  env: Environment = process.env,
  context: ParseContext = {},
): OptionsOf<S> {
  const where = (option: string) => `source ${spec.type}: ${option}`;
  const out: Record<string, unknown> = {};
  const known = Object.keys(spec.options);
  for (const [rawKey, value] of Object.entries(input)) {
    if (rawKey === "type") continue;
    const key = camel(rawKey);
    if (!(key in spec.options)) {
      const hint = didYouMean(key, known);
      throw new ConfigError(
        where(rawKey),
        `unknown option${hint ? `; did you mean "${hint}"?` : "."} Known options: ${known.join(", ")}`,
      );
    }
    out[key] = value;
  }
  if (context.origin === "config") {
    const [literal] = literalSecrets(spec, input);
    if (literal) throw new ConfigError(where(literal.option), literal.message);
  }
  for (const [key, opt] of Object.entries(spec.options)) {
    let value = out[key];
    if (value === undefined || value === null) {
      if (opt.required) throw new ConfigError(where(key), `is required: ${opt.description}`);
      if (opt.default !== undefined) out[key] = structuredClone(opt.default);
      continue;
    }
    const resolved = resolveReferences(opt, value, where(key), env);
    value = coerce(opt, resolved.value, where(key), resolved.from);
    out[key] = value;
  }
  const problem = spec.check?.(out);
  if (problem) throw new ConfigError(where(problem.option), problem.message);
  // Every key was checked against its declaration above, which is what OptionsOf<S> spells.
  return out as OptionsOf<S>;
}

const WHOLE_REFERENCE = /^env:([A-Za-z_][A-Za-z0-9_]*)$/;
const INLINE_REFERENCE = /\$\{ENV:([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** One string with its references replaced; `from` names them, for messages that must not show the value. */
function resolveString(text: string, where: string, env: Environment): { value: string; from?: string } {
  const lookup = (name: string): string => {
    const v = env[name];
    if (v === undefined) throw new ConfigError(where, `refers to the environment variable ${name}, which is not set`);
    if (v === "") throw new ConfigError(where, `refers to the environment variable ${name}, which is empty`);
    return v;
  };
  const whole = WHOLE_REFERENCE.exec(text);
  if (whole) return { value: lookup(whole[1]!), from: `env:${whole[1]!}` };
  const names: string[] = [];
  const value = text.replace(INLINE_REFERENCE, (_, name: string) => {
    names.push(name);
    return lookup(name);
  });
  return names.length === 0 ? { value } : { value, from: names.map((n) => `\${ENV:${n}}`).join(", ") };
}

/** The option's value with environment references resolved (a new object or list: the input is never changed). */
function resolveReferences(opt: OptionSpec, value: unknown, where: string, env: Environment): { value: unknown; from?: string } {
  if (opt.type === "any") return { value };
  if (opt.type === "object") {
    // Only objects that hold credentials: other objects are passed through untouched.
    if (!opt.secret || typeof value !== "object" || value === null || Array.isArray(value)) return { value };
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = typeof v === "string" ? resolveString(v, `${where}.${k}`, env).value : v;
    return { value: out };
  }
  if (typeof value === "string") return resolveString(value, where, env);
  if (opt.type === "string[]" && Array.isArray(value)) {
    const from: string[] = [];
    const list = value.map((v: unknown) => {
      if (typeof v !== "string") return v;
      const r = resolveString(v, where, env);
      if (r.from) from.push(r.from);
      return r.value;
    });
    return from.length === 0 ? { value: list } : { value: list, from: from.join(", ") };
  }
  return { value };
}

function coerce(opt: OptionSpec, value: unknown, where: string, from?: string): unknown {
  // A value from the environment is not echoed either: it may be a secret in an option not declared one.
  const shown = opt.secret ? "<secret>" : from ? `the value of ${from}` : JSON.stringify(value);
  const fail = (expected: string): never => {
    throw new ConfigError(where, `expected ${expected}; got ${shown}`);
  };
  switch (opt.type) {
    case "string":
      if (typeof value !== "string" || value === "") fail("a non-empty string");
      if (opt.enum && !opt.enum.includes(value as string)) fail(`one of ${opt.enum.join(", ")}`);
      return value;
    case "number":
    case "integer": {
      // JSON configs written by hand often quote numbers; accept numeric strings.
      const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
      if (typeof n !== "number" || !Number.isFinite(n)) fail(opt.type === "integer" ? "a whole number" : "a number");
      if (opt.type === "integer" && !Number.isInteger(n)) fail("a whole number");
      if (opt.min !== undefined && (n as number) < opt.min) fail(`a number >= ${opt.min}`);
      if (opt.max !== undefined && (n as number) > opt.max) fail(`a number <= ${opt.max}`);
      return n;
    }
    case "boolean":
      if (value === "true") return true;
      if (value === "false") return false;
      if (typeof value !== "boolean") fail("true or false");
      return value;
    case "string[]": {
      // A comma-separated string is the natural form on a command line.
      const list = typeof value === "string" ? value.split(",").map((s) => s.trim()).filter(Boolean) : value;
      if (!Array.isArray(list) || list.length === 0 || !list.every((s) => typeof s === "string" && s !== "")) {
        fail("a non-empty list of strings (or a comma-separated string)");
      }
      return list;
    }
    case "object":
      if (typeof value !== "object" || value === null || Array.isArray(value)) fail("an object");
      return value;
    case "any":
      return value;
  }
}

/** Markdown reference for one component, generated from its spec. */
export function renderSpecMarkdown(spec: ComponentSpec): string {
  const lines = [
    `### \`${spec.type}\``,
    "",
    spec.summary,
    "",
    `Kind: **${spec.kind}**${spec.peerDependency ? ` · needs \`npm install ${spec.peerDependency}\`` : ""}`,
    "",
    "| option | type | required | default | description |",
    "|---|---|---|---|---|",
  ];
  for (const [key, o] of Object.entries(spec.options)) {
    const type = o.enum ? o.enum.map((e) => `\`${e}\``).join(" \\| ") : o.type;
    const def = o.default === undefined ? "" : `\`${JSON.stringify(o.default)}\``;
    const secret = !o.secret
      ? ""
      : o.type === "object" || o.type === "any"
        ? " **Secret:** in a JSON config its credential fields are `env:NAME` references."
        : " **Secret:** in a JSON config, an `env:NAME` reference.";
    lines.push(`| \`${key}\` | ${type} | ${o.required ? "yes" : ""} | ${def} | ${(o.description + secret).replace(/\|/g, "\\|")} |`);
  }
  return lines.join("\n") + "\n";
}

/** Import an optional peer dependency, or say exactly what to install. */
export function requirePeer<T>(packageName: string, feature: string): Promise<T> {
  return loadPeer<T>(packageName, feature);
}
