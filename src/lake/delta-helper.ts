/**
 * The Delta helper (delta/helper.py): delta-rs, the `deltalake` writer the Python LakeLogic
 * package uses, in one long-lived Python process per lake writer. No maintained Node library
 * writes Delta; a helper process keeps the Rust writer out of this package's install and hands
 * it each batch as a Parquet file (docs/lake.md, "Delta Lake").
 *
 * Which Python: `LAKELOGIC_DELTA_PYTHON` (any Python with `deltalake` and `pyarrow`), else the
 * provisioning cache's environment for the pinned version (scripts/provision-deltalake.sh).
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../errors.js";
import { LineProcess, type LineReply } from "../util/line-process.js";
import { LakeWriteError } from "./errors.js";

export const DELTALAKE_VERSION = "1.6.6";

/** delta/helper.py shipped with the package, found from src/lake and from dist/src/lake. */
function helperPath(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, "delta", "helper.py");
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new ConfigError("materialization.format", "delta/helper.py is missing from the lakelogic package: reinstall it");
}

export function deltaPython(env: NodeJS.ProcessEnv = process.env): string {
  if (env.LAKELOGIC_DELTA_PYTHON) return env.LAKELOGIC_DELTA_PYTHON;
  const cache = env.LAKELOGIC_CACHE ?? join(homedir(), ".cache", "lakelogic");
  const python = join(cache, `deltalake-${DELTALAKE_VERSION}`, "venv", "bin", "python");
  if (!existsSync(python)) {
    throw new ConfigError(
      "materialization.format",
      `format delta writes through delta-rs (Python package deltalake ${DELTALAKE_VERSION}), and no Python with it was found at ${python}: ` +
        "run scripts/provision-deltalake.sh, or set LAKELOGIC_DELTA_PYTHON to a Python that has deltalake and pyarrow installed",
    );
  }
  return python;
}

/** A request the helper failed: its Python exception's kind and message. */
export class DeltaHelperError extends LakeWriteError {
  constructor(
    message: string,
    readonly kind?: string,
  ) {
    // A lost connection or an object store's hiccup may pass; the writer decides per request.
    super(message, { retriable: true });
  }
}

export class DeltaHelper {
  private constructor(private readonly process: LineProcess) {}

  static start(): DeltaHelper {
    const python = deltaPython();
    return new DeltaHelper(
      new LineProcess(python, ["-u", helperPath()], {
        name: "the Delta helper",
        error: (message) => new DeltaHelperError(message),
        echoStderr: process.env.LAKELOGIC_DELTA_DEBUG === "1",
      }),
    );
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  /** One request; rejects with DeltaHelperError carrying the helper's message. */
  async request<T>(op: string, body: Record<string, unknown>): Promise<T & LineReply> {
    const reply = await this.process.request(op, body);
    if (!reply.ok) throw new DeltaHelperError(reply.error ?? "the Delta helper failed the request", reply.kind);
    return reply as T & LineReply;
  }

  close(): Promise<void> {
    return this.process.close();
  }
}
