/**
 * Secrets stay out of configs. A JSON source config — a contract's `source:` block, `lakelogic
 * run --source`, a Temporal workflow's input — is stored, shared and kept in histories, so an
 * option that holds a credential must name where the secret lives (`env:NAME`, or `${ENV:NAME}`
 * inside a string) rather than carry it. Code that builds a connector reads its own secrets and
 * may pass them as they are; only the JSON path asks for these checks.
 */

/** What these checks read of a connector's spec (spec.ts's ComponentSpec fits; declared here so spec.ts can import this file). */
interface SecretOption {
  type: string;
  secret?: boolean;
  fields?: Readonly<Record<string, SecretOption>>;
}
export interface SecretSpec {
  type: string;
  options: Readonly<Record<string, SecretOption>>;
}

/** A string that refers to the environment: `env:NAME` as a whole, or `${ENV:NAME}` anywhere. */
export function isReference(text: string): boolean {
  return /^env:[A-Za-z_][A-Za-z0-9_]*$/.test(text) || /\$\{ENV:[A-Za-z_][A-Za-z0-9_]*\}/.test(text);
}

/** Header names that carry a credential whatever their words say. */
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(["authorization", "proxyauthorization", "cookie", "setcookie"]);
/** Last words that make a name a credential: `saslPassword`, `hmacSecret`, `X-Auth-Token`. */
const CREDENTIAL_WORDS: ReadonlySet<string> = new Set(["password", "passwd", "pwd", "passphrase", "secret", "token", "credential", "credentials"]);
/** A name ending in `key` is a credential only after one of these (`accessKey`, `x-api-key`), not `partitionKey`. */
const KEY_QUALIFIERS: ReadonlySet<string> = new Set(["api", "access", "shared", "account", "private", "subscription", "master", "secret", "sas", "signing", "hmac", "client"]);

/** The words of a name: `secretAccessKey`, `secret_access_key` and `Secret-Access-Key` alike. */
function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[\s_\-.]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

/** Whether an option, field or header with this name holds a credential. */
export function isCredentialName(name: string): boolean {
  const w = words(name);
  const last = w[w.length - 1];
  if (last === undefined) return false;
  if (CREDENTIAL_HEADERS.has(w.join(""))) return true;
  if (CREDENTIAL_WORDS.has(last)) return true;
  if (last === "key") return w.length > 1 && KEY_QUALIFIERS.has(w[w.length - 2]!);
  return last === "string" && w[w.length - 2] === "connection";
}

/** Authorization schemes kept in the hint: they say how to write the value, not what it is. */
const AUTH_SCHEMES = ["Bearer", "Basic", "Token", "ApiKey", "SharedAccessKey", "SharedAccessSignature", "Digest"];

/** One credential written into a config. `path` is as written (for lint positions); `option` names it as messages do. */
export interface LiteralSecret {
  path: string[];
  option: string;
  message: string;
}

/**
 * What to write instead of `value`: `env:SERVICEBUS_CONNECTION_STRING` from the words of `parts`
 * (source type, option, field), or `Bearer ${ENV:…}` when the value starts with an auth scheme.
 * The value itself is never part of it.
 */
export function referenceHint(parts: readonly string[], value: unknown): string {
  const name = parts
    .flatMap(words)
    .join("_")
    .toUpperCase()
    .replace(/[^A-Z0-9_]/g, "_");
  const scheme = typeof value === "string" ? AUTH_SCHEMES.find((s) => value.startsWith(`${s} `)) : undefined;
  return scheme ? `${scheme} \${ENV:${name}}` : `env:${name}`;
}

function refusal(type: string, option: string, key: string | undefined, value: unknown): string {
  const hint = referenceHint(key === undefined ? [type, option] : [type, option, key], value);
  return `a secret must not be written into a config; use "${hint}" (or \${ENV:NAME} inside a string)`;
}

/** A value written as it is: a non-empty string without a reference, or a number. */
export function isLiteral(value: unknown): boolean {
  if (typeof value === "string") return value.trim() !== "" && !isReference(value);
  return typeof value === "number" || typeof value === "bigint";
}

const camel = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** Node TLS options that hold a private key or what unlocks it (`ssl: {key, passphrase, pfx}`). */
const TLS_OPTIONS: ReadonlySet<string> = new Set(["ssl", "tls"]);
const TLS_SECRET_FIELDS: ReadonlySet<string> = new Set(["key", "pfx", "passphrase"]);
/** Query parameters whose value is a credential: `?token=`, a SAS `sig=`, `api_key=`, … */
const URL_SECRET_PARAMS: ReadonlySet<string> = new Set([
  "token", "access_token", "refresh_token", "id_token", "sig", "signature", "apikey", "api_key", "api-key",
  "key", "secret", "client_secret", "password", "passwd", "pwd", "sharedaccesskey", "x-amz-signature", "x-amz-security-token",
]);

/**
 * What of a URL written into a config is a credential: a password in its user-info or a
 * credential query parameter (as written, so a reference there is not one). Undefined when none,
 * or when the text is not a URL.
 */
export function urlCredential(text: string): string | undefined {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return undefined;
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return undefined;
  }
  if (u.password !== "" && !isReference(decodeURIComponent(u.password))) return "the password in its user-info";
  for (const [name, value] of u.searchParams) {
    if (URL_SECRET_PARAMS.has(name.toLowerCase()) && value !== "" && !isReference(value)) return `its "${name}" parameter`;
  }
  return undefined;
}

function urlRefusal(type: string, option: string, what: string): string {
  const hint = referenceHint([type, option], undefined);
  return `a URL with a credential (${what}) must not be written into a config; write the secret part as \${ENV:NAME} (e.g. postgres://user:\${ENV:PGPASSWORD}@host/db), or the whole URL as "${hint}"`;
}

/** The literals of one option's value: the whole value, or the credential fields of a secret object. */
function literalsOf(type: string, key: string, rawKey: string, opt: SecretOption, value: unknown): LiteralSecret[] {
  if (typeof value === "string" && !opt.secret) {
    // Any URL option (an SSE feed, a webhook, a lake path) may carry a credential in it.
    const what = urlCredential(value);
    return what === undefined ? [] : [{ path: [rawKey], option: key, message: urlRefusal(type, key, what) }];
  }
  if (opt.fields && typeof value === "object" && value !== null && !Array.isArray(value)) {
    // A nested block of declared options: its secrets are named as if written beside `type`.
    return literalSecrets({ type, options: opt.fields }, value as Record<string, unknown>).map((l) => ({
      ...l,
      path: [rawKey, ...l.path],
      option: `${key}.${l.option}`,
    }));
  }
  if (!opt.secret) return [];
  if (opt.type === "object" || opt.type === "any") {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return [];
    const tls = TLS_OPTIONS.has(key.toLowerCase());
    return Object.entries(value as Record<string, unknown>)
      .filter(([field, v]) => (isCredentialName(field) || (tls && TLS_SECRET_FIELDS.has(field.toLowerCase()))) && isLiteral(v))
      .map(([field, v]) => ({ path: [rawKey, field], option: `${key}.${field}`, message: refusal(type, key, field, v) }));
  }
  // A number or list where a string is expected is a type error, which parseOptions reports.
  if (typeof value !== "string" || !isLiteral(value)) return [];
  return [{ path: [rawKey], option: key, message: refusal(type, key, undefined, value) }];
}

/**
 * Every credential written as a literal in `input` (a JSON config for `spec`), in the order of
 * its keys. Nothing is resolved: this only reads what was written.
 */
export function literalSecrets(spec: SecretSpec, input: Readonly<Record<string, unknown>>): LiteralSecret[] {
  const out: LiteralSecret[] = [];
  for (const [rawKey, value] of Object.entries(input)) {
    const key = camel(rawKey);
    const opt = Object.hasOwn(spec.options, key) ? spec.options[key] : undefined;
    if (opt) out.push(...literalsOf(spec.type, key, rawKey, opt, value));
  }
  return out;
}
