import { ConfigError } from "../../errors.js";
import { collapseRepeats, liveDefaultLogger } from "../../observe/logger.js";

/** How a push connector reconnects. Every field is optional; see `DEFAULT_RETRY`. */
export interface RetryPolicy {
  /** First delay after a failure. For SSE the server's `retry:` field replaces it. Default 1000. */
  initialDelayMs?: number;
  /** Upper bound of the delay (a server's `retry:` / Retry-After above it still wins). Default 30000. */
  maxDelayMs?: number;
  /** Growth per consecutive failure. Default 2. */
  multiplier?: number;
  /** Fraction (0–1) of each delay that is randomised away, so clients do not reconnect in lockstep. Default 0.3. */
  jitter?: number;
  /** Consecutive failed attempts (network errors, 5xx, 429, stalls) before giving up. Default: never give up. */
  maxAttempts?: number;
  /** Consecutive 4xx answers other than 408/429 (bad URL, bad credentials) before giving up. Default 3. */
  maxClientErrorAttempts?: number;
}

export type ResolvedRetryPolicy = Required<Omit<RetryPolicy, "maxAttempts">> & { maxAttempts: number };

export const DEFAULT_RETRY: ResolvedRetryPolicy = Object.freeze({
  initialDelayMs: 1000,
  maxDelayMs: 30_000,
  multiplier: 2,
  jitter: 0.3,
  maxAttempts: Number.POSITIVE_INFINITY,
  maxClientErrorAttempts: 3,
});

const RETRY_KEYS: ReadonlyArray<keyof RetryPolicy> = [
  "initialDelayMs",
  "maxDelayMs",
  "multiplier",
  "jitter",
  "maxAttempts",
  "maxClientErrorAttempts",
];

/** Validate a retry policy (from code or JSON) and fill in defaults. */
export function resolveRetry(policy: RetryPolicy | undefined, option = "retry"): ResolvedRetryPolicy {
  if (policy === undefined || policy === null) return { ...DEFAULT_RETRY };
  if (typeof policy !== "object" || Array.isArray(policy)) {
    throw new ConfigError(option, `expected an object like {"initialDelayMs": 1000, "maxDelayMs": 30000}; got ${JSON.stringify(policy)}`);
  }
  const out: ResolvedRetryPolicy = { ...DEFAULT_RETRY };
  for (const [rawKey, raw] of Object.entries(policy as Record<string, unknown>)) {
    const key = rawKey.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()) as keyof RetryPolicy;
    if (!RETRY_KEYS.includes(key)) {
      throw new ConfigError(`${option}.${rawKey}`, `unknown option; known: ${RETRY_KEYS.join(", ")}`);
    }
    if (raw === undefined || raw === null) continue;
    const n = typeof raw === "string" && raw.trim() !== "" ? Number(raw) : raw;
    if (typeof n !== "number" || Number.isNaN(n)) {
      throw new ConfigError(`${option}.${rawKey}`, `expected a number; got ${JSON.stringify(raw)}`);
    }
    const min = key === "jitter" ? 0 : key === "multiplier" ? 1 : key.startsWith("max") && key !== "maxDelayMs" ? 1 : 0;
    if (n < min || (key === "jitter" && n > 1)) {
      throw new ConfigError(`${option}.${rawKey}`, key === "jitter" ? `expected a number from 0 to 1; got ${n}` : `expected a number >= ${min}; got ${n}`);
    }
    out[key] = n;
  }
  if (out.maxDelayMs < out.initialDelayMs) {
    throw new ConfigError(`${option}.maxDelayMs`, `must be >= initialDelayMs (${out.initialDelayMs}); got ${out.maxDelayMs}`);
  }
  return out;
}

/**
 * Delay before reconnect attempt `failures` (1 = first retry): exponential from `base`, capped,
 * with part of it randomised away; never below `floorMs` (a server's Retry-After).
 */
export function backoffDelay(
  policy: ResolvedRetryPolicy,
  failures: number,
  options: { baseMs?: number; floorMs?: number; random?: () => number } = {},
): number {
  const base = options.baseMs ?? policy.initialDelayMs;
  const cap = Math.max(policy.maxDelayMs, base);
  const exp = Math.min(cap, base * policy.multiplier ** Math.max(0, failures - 1));
  const jittered = exp * (1 - policy.jitter * (options.random ?? Math.random)());
  return Math.max(Math.round(jittered), options.floorMs ?? 0);
}

/** Parse an HTTP Retry-After header (seconds or an HTTP date) into ms. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export { sleep } from "../../util/wait.js";

/** What a retry looked like, for logs and metrics. */
export interface RetryInfo {
  connector: string;
  /** Consecutive failures so far (1 = the first). */
  attempt: number;
  delayMs: number;
  error: Error;
}

/** Retry notices of every connector, each condition said once and again every few minutes (collapseRepeats). */
const retryLog = collapseRepeats(liveDefaultLogger);

/**
 * The default `onRetry`: a warning on the process logger (stderr), so a retry loop is never
 * silent; the same failure again goes to debug, and is said again at warn after a few minutes.
 */
export function warnRetry(info: RetryInfo): void {
  retryLog.warn(`${info.error.message}; reconnecting in ${(info.delayMs / 1000).toFixed(1)} s (failure ${info.attempt})`, {
    connector: info.connector,
    attempt: info.attempt,
    delayMs: info.delayMs,
  });
}
