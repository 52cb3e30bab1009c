/**
 * The one rule for tests that need a real server (PostgreSQL, Kafka, Temporal, an SQS server …):
 *
 * - In CI (`CI=true`, or `LAKELOGIC_REQUIRE_SERVICES=1` anywhere) a server that cannot be started
 *   is a FAILURE: `requireService` rethrows and the test file fails to load.
 * - Outside CI the suite may be skipped, but it always prints `[skip] <suite>: <why>` to stderr.
 *
 * Usage (top level of a test file; vitest supports top-level await):
 *
 * ```ts
 * const pg = await requireService("sources/watermark on PostgreSQL", () => startPostgres());
 * afterAll(() => pg?.stop());
 * describe.skipIf(!pg)("WatermarkChunkSource on PostgreSQL", () => {
 *   it("…", async () => { const url = pg!.url; … });
 * });
 * ```
 *
 * `requireService` returns `undefined` only when skipping is allowed, so `describe.skipIf(!svc)`
 * can never skip in CI: there the await throws instead. Write a `start` function for a new
 * service that throws an Error whose message says what is missing and how to provision it
 * (e.g. "run scripts/provision-kafka.sh"); that message is what the skip line and CI failure show.
 */

/** True when a missing service must fail the run rather than skip. */
export function servicesRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  const ci = (env.CI ?? "").toLowerCase();
  const forced = (env.LAKELOGIC_REQUIRE_SERVICES ?? "").toLowerCase();
  // Accept "1" as well as "true": being stricter can only turn a skip into a failure.
  return ci === "true" || ci === "1" || forced === "true" || forced === "1";
}

export class ServiceUnavailableError extends Error {
  readonly suite: string;
  constructor(suite: string, cause: unknown) {
    super(`${suite}: required service could not be started (CI requires it): ${reasonOf(cause)}`, {
      cause,
    });
    this.name = "ServiceUnavailableError";
    this.suite = suite;
  }
}

export interface RequireServiceOptions {
  /** Defaults to `process.env`; tests of this helper pass their own. */
  env?: NodeJS.ProcessEnv;
  /** Where the skip line goes; defaults to stderr, which vitest shows even with `--silent`. */
  log?: (line: string) => void;
}

/**
 * Start a service for a suite. Returns the started service, or `undefined` (after printing
 * `[skip] <suite>: <why>`) when it cannot be started and skipping is allowed. In CI it throws
 * `ServiceUnavailableError` instead, so the suite fails. The caller stops the service
 * (`afterAll(() => svc?.stop())`).
 */
export async function requireService<T>(
  suite: string,
  start: () => Promise<T>,
  options: RequireServiceOptions = {},
): Promise<T | undefined> {
  try {
    return await start();
  } catch (error) {
    if (servicesRequired(options.env ?? process.env)) throw new ServiceUnavailableError(suite, error);
    const line = `[skip] ${suite}: ${reasonOf(error)}\n`;
    if (options.log) options.log(line.trimEnd());
    else process.stderr.write(line);
    return undefined;
  }
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
