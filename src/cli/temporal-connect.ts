/**
 * What the Temporal commands share before they talk to a server: the optional @temporalio/*
 * packages must be installed (else a message naming them, exit 2), and the server must answer
 * (else the address tried and how to start one, exit 1). Nothing here imports the SDK statically,
 * so `lakelogic <command> --help` and argument errors work without it.
 */
import { connect } from "node:net";
import { LakeLogicError, NonRetriableError } from "../errors.js";
import type * as ClientModule from "../temporal/client.js";
import { UsageError } from "./types.js";

/** What the Temporal runtime loads: the client, the worker, and the SDKs of the workflows and activities. */
export const TEMPORAL_PACKAGES = ["@temporalio/client", "@temporalio/worker", "@temporalio/workflow", "@temporalio/activity"] as const;

export const DEFAULT_TEMPORAL_ADDRESS = "127.0.0.1:7233";
/** Seconds to wait for the server's port; a refused connection fails at once. */
export const DEFAULT_CONNECT_TIMEOUT_S = 5;
export const CONNECT_TIMEOUT_ENV = "LAKELOGIC_TEMPORAL_CONNECT_TIMEOUT";

/** The Temporal server did not answer: a failed command (exit 1), not bad input. */
export class TemporalUnreachableError extends LakeLogicError {
  constructor(
    readonly address: string,
    reason: string,
  ) {
    super(
      "TEMPORAL_UNREACHABLE",
      `cannot reach the Temporal server at ${address} (${reason}). Start a local one with ` +
        `"temporal server start-dev" (the Temporal CLI), or point --address or TEMPORAL_ADDRESS at yours.`,
    );
  }
}

/** The Temporal SDK (optional peers) is not installed: bad setup, exit 2, with the command to fix it. */
export class TemporalNotInstalledError extends NonRetriableError {
  constructor(
    readonly packageName: string,
    command: string,
    options?: { cause?: unknown },
  ) {
    super(
      "MISSING_DEPENDENCY",
      `lakelogic ${command} needs the Temporal SDK, optional packages that are not installed (${packageName} cannot be found). ` +
        `Install them with: npm install ${TEMPORAL_PACKAGES.join(" ")}`,
      options,
    );
  }
}

/**
 * The error to show for `err` when it is an @temporalio/* package failing to import, else undefined.
 */
export function temporalMissingError(err: unknown, command: string): TemporalNotInstalledError | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return undefined;
  const named = err instanceof Error ? /'(@temporalio\/[a-z-]+)'/.exec(err.message)?.[1] : undefined;
  if (named === undefined) return undefined;
  return new TemporalNotInstalledError(named, command, { cause: err });
}

/** The Temporal client module, or a TemporalNotInstalledError naming the packages to install. */
export async function importTemporalClient(command: string): Promise<typeof ClientModule> {
  try {
    return await import("../temporal/client.js");
  } catch (err) {
    throw temporalMissingError(err, command) ?? err;
  }
}

/** `--address`, else $TEMPORAL_ADDRESS, else the local default. */
export function temporalAddressOf(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const address = flag ?? env.TEMPORAL_ADDRESS ?? DEFAULT_TEMPORAL_ADDRESS;
  if (address.trim() === "") throw new UsageError("--address needs HOST:PORT, e.g. 127.0.0.1:7233");
  return address.trim();
}

/** `--connect-timeout` (seconds), else $LAKELOGIC_TEMPORAL_CONNECT_TIMEOUT, else 5. */
export function connectTimeoutMsOf(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): number {
  const raw = flag ?? env[CONNECT_TIMEOUT_ENV];
  if (raw === undefined || raw.trim() === "") return DEFAULT_CONNECT_TIMEOUT_S * 1000;
  const seconds = Number(raw);
  const source = flag !== undefined ? "--connect-timeout" : CONNECT_TIMEOUT_ENV;
  if (!Number.isFinite(seconds) || seconds <= 0) throw new UsageError(`${source} must be a number of seconds > 0 (got "${raw}")`);
  return Math.round(seconds * 1000);
}

function hostPort(address: string): { host: string; port: number } | undefined {
  const colon = address.lastIndexOf(":");
  if (colon <= 0) return undefined;
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
  const port = Number(address.slice(colon + 1));
  return host !== "" && Number.isInteger(port) && port > 0 && port < 65536 ? { host, port } : undefined;
}

/**
 * Opens and closes a TCP connection to `address`. The SDK retries a refused connection until its
 * own deadline; this answers at once when nothing listens, and within `timeoutMs` otherwise.
 */
export async function probeTemporal(address: string, timeoutMs: number): Promise<void> {
  const target = hostPort(address);
  if (!target) throw new UsageError(`--address must be HOST:PORT (got "${address}")`);
  await new Promise<void>((resolve, reject) => {
    const socket = connect(target);
    const fail = (reason: string) => {
      socket.destroy();
      reject(new TemporalUnreachableError(address, reason));
    };
    socket.setTimeout(timeoutMs, () => fail(`no answer within ${timeoutMs / 1000}s`));
    socket.once("connect", () => {
      socket.destroy();
      resolve();
    });
    socket.once("error", (err: NodeJS.ErrnoException) => fail(err.code === "ECONNREFUSED" ? "connection refused" : (err.code ?? err.message)));
  });
}

/** True for the SDK's ways of saying the server did not answer. */
export function isConnectFailure(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    err.name === "TransportError" ||
    /Failed to connect before the deadline|tcp connect error|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|No connection established/i.test(err.message)
  );
}

/** The flags of a command that talks to the server as a client, with the connect timeout. */
export const CONNECT_TIMEOUT_FLAG = { "connect-timeout": { type: "string" } } as const;
export const CONNECT_TIMEOUT_HELP = `  --connect-timeout S   give up when the server does not answer within S seconds
                        (default: $${CONNECT_TIMEOUT_ENV} or ${DEFAULT_CONNECT_TIMEOUT_S})`;

/**
 * A connected StreamClient for `lakelogic <command>`: the packages are checked, the server's
 * port is probed, and a connection failure names the address and how to start a server.
 */
export async function connectStreamClient(
  command: string,
  values: { address?: string; namespace?: string; "task-queue"?: string; "connect-timeout"?: string },
): Promise<ClientModule.StreamClient> {
  const address = temporalAddressOf(values.address);
  const timeoutMs = connectTimeoutMsOf(values["connect-timeout"]);
  const { StreamClient } = await importTemporalClient(command);
  await probeTemporal(address, timeoutMs);
  try {
    return await StreamClient.connect({ address, namespace: values.namespace, taskQueue: values["task-queue"], connectTimeoutMs: timeoutMs });
  } catch (err) {
    if (isConnectFailure(err)) throw new TemporalUnreachableError(address, err instanceof Error ? err.message : String(err));
    throw err;
  }
}
