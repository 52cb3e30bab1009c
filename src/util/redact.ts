/**
 * Keeping secrets out of messages. Anything a server or a library says (an error message, a
 * response body, a close reason) may echo the URL we asked for or the credentials we sent, so
 * every such text passes through `redactText` before it becomes part of an error, a log line or
 * a status.
 */

const MARK = "<redacted>";

/** Values shorter than this are not searched for: they would match ordinary text ("1", "ok"). */
const MIN_SECRET_LENGTH = 4;

/** Parameter and field names whose values are credentials. */
const SECRET_NAMES = [
  "access_token",
  "refresh_token",
  "id_token",
  "token",
  "sig",
  "signature",
  "code",
  "key",
  "apikey",
  "api_key",
  "api-key",
  "secret",
  "client_secret",
  "password",
  "passwd",
  "pwd",
  "sharedaccesskey",
  "accountkey",
  "sessiontoken",
  "x-amz-signature",
  "x-amz-credential",
  "x-amz-security-token",
  "authorization",
].join("|");

/** A query parameter or header name that carries a credential. */
const SECRET_NAME = /token|sig|key|secret|pass|pwd|auth|cred|code|session|jwt|cookie/i;

const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;
const KEY_VALUE = new RegExp(`(?<![\\w-])(${SECRET_NAMES})(\\s*=\\s*)(?!(?:Bearer|Basic|Digest|Negotiate)\\s)([^&\\s;,"'<>]+)`, "gi");
const JSON_FIELD = new RegExp(`("(?:${SECRET_NAMES})"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`, "gi");
const AUTH_SCHEME = /\b(Bearer|Basic|Digest|Negotiate|SharedAccessSignature)(\s+)(?!<redacted>)[A-Za-z0-9._~+/=%-]+/g;
const HEADER_LINE = /\b((?:proxy-)?authorization|x-api-key|api-key|cookie)(\s*:\s*)(?!(?:Bearer|Basic|Digest|Negotiate)\b)([^\s,;"']+)/gi;

/**
 * A URL as it may appear in messages and logs: no credentials, no query string (tokens often
 * travel there), so an error can be pasted into a ticket without leaking a secret.
 */
export function redactUrl(url: string | URL): string {
  try {
    const u = new URL(String(url));
    return `${u.protocol}//${u.host}${u.pathname}${u.search ? "?…" : ""}`;
  } catch {
    return "<invalid url>";
  }
}

/**
 * `text` without secrets: URLs inside it lose their user-info and query string, token-like
 * `name=value` pairs, JSON fields and Authorization values lose their value, and every known
 * secret value (also URL-encoded) is replaced.
 */
export function redactText(text: string, secrets: Iterable<string> = []): string {
  let out = text.replace(URL_IN_TEXT, redactUrlInText);
  // Longest first, so a secret that contains another is replaced whole.
  const known = [...new Set(expand(secrets))].sort((a, b) => b.length - a.length);
  for (const s of known) out = out.split(s).join(MARK);
  out = out.replace(JSON_FIELD, `$1"${MARK}"`);
  out = out.replace(AUTH_SCHEME, `$1$2${MARK}`);
  out = out.replace(HEADER_LINE, `$1$2${MARK}`);
  out = out.replace(KEY_VALUE, (whole, name: string, eq: string, value: string) => (value === MARK ? whole : `${name}${eq}${MARK}`));
  return out;
}

/** An error's message with its cause's (libraries such as undici put the reason there), redacted. */
export function errorText(err: unknown, secrets: Iterable<string> = []): string {
  let text: string;
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    // The cause's message too, when a library wrapped a more telling one and did not repeat it.
    text = cause instanceof Error && cause.message && !err.message.includes(cause.message) ? `${err.message} (${cause.message})` : err.message;
  } else {
    text = String(err);
  }
  return redactText(text, secrets);
}

/**
 * `err` when nothing in it (message, causes) shows a secret, else undefined: an error's cause
 * travels on (into logs, into Temporal's failure history), so a cause that would leak is dropped
 * and the redacted message stands alone.
 */
export function safeCause(err: unknown, secrets: Iterable<string> = []): unknown {
  const list = [...secrets];
  let e: unknown = err;
  for (let depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    // Something that is neither an error nor text cannot be checked: leave it out.
    if (!(e instanceof Error) && typeof e !== "string") return undefined;
    const message = e instanceof Error ? e.message : e;
    if (redactText(message, list) !== message) return undefined;
    e = e instanceof Error ? (e as { cause?: unknown }).cause : undefined;
  }
  return err;
}

/**
 * The secrets a URL carries: its password (and the Basic credentials built from the user-info,
 * as a server may echo the Authorization header) and the values of token-like query parameters.
 */
export function secretsOfUrl(url: string | URL): string[] {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    return [];
  }
  const out: string[] = [];
  if (u.password) {
    const user = decode(u.username);
    const password = decode(u.password);
    out.push(u.password, password, Buffer.from(`${user}:${password}`).toString("base64"));
  }
  for (const [name, value] of u.searchParams) if (SECRET_NAME.test(name) && value) out.push(value);
  return out;
}

/** The values of credential headers (Authorization, API keys, cookies), whole and without their scheme. */
export function secretsOfHeaders(headers: Readonly<Record<string, unknown>> | undefined): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (typeof value !== "string" || !SECRET_NAME.test(name)) continue;
    out.push(value);
    const credentials = /^\s*[A-Za-z-]+\s+(\S.*)$/.exec(value)?.[1];
    if (credentials) out.push(credentials);
  }
  return out;
}

function redactUrlInText(match: string): string {
  // Punctuation that ends a sentence is not part of the URL.
  const [, body = match, tail = ""] = /^(.*?)([.,;:)\]}]*)$/s.exec(match) ?? [];
  let u: URL;
  try {
    u = new URL(body);
  } catch {
    return body.replace(/\/\/[^/@\s]*@/, "//").replace(/\?.*$/, "?…") + tail;
  }
  const alreadyRedacted = u.search === "" || decode(u.search) === "?…";
  return u.username || u.password || !alreadyRedacted ? redactUrl(u) + tail : match;
}

/** Each secret as given and URL-encoded, skipping values too short to search for. */
function* expand(secrets: Iterable<string>): Generator<string> {
  for (const s of secrets) {
    if (typeof s !== "string" || s.length < MIN_SECRET_LENGTH) continue;
    yield s;
    const encoded = encodeURIComponent(s);
    if (encoded !== s) yield encoded;
  }
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
