/**
 * The `lakelogic` command: `lakelogic <command> [args]`. Subcommands live in ./commands and are
 * registered in ./commands/index.ts. Runnable directly (`tsx src/cli/main.ts lint contracts`)
 * and through bin/lakelogic.js, which imports `main`.
 */
import { didYouMean } from "../contract/suggest.js";
import { LakeLogicError } from "../errors.js";
import { liveDefaultLogger, routeProcessWarnings } from "../observe/logger.js";
import { StreamRunError } from "../sink/errors.js";
import { COMMANDS, findCommand } from "./commands/index.js";
import { isConnectFailure, temporalAddressOf, temporalMissingError, TemporalUnreachableError } from "./temporal-connect.js";
import { isEntryPoint } from "./entry.js";
import { packageInfo } from "../util/package-info.js";
import { EXIT, UsageError, type CliIO } from "./types.js";

export { COMMANDS } from "./commands/index.js";
export { EXIT, UsageError, type CliCommand, type CliIO } from "./types.js";

const processIO: CliIO = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

export function rootHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  const commands = COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join("\n");
  return `Usage: lakelogic <command> [options]

Contract-driven, crash-safe streaming ingestion.

Commands:
${commands}

Options:
  -h, --help      show this help (lakelogic <command> --help for a command's)
  -v, --version   print the version

Run "lakelogic help <command>" for a command's options.
`;
}

function unknownCommand(name: string, io: CliIO): number {
  const guess = didYouMean(name, COMMANDS.map((c) => c.name));
  const hint = guess === undefined ? "" : ` Did you mean "${guess}"?`;
  io.stderr(`lakelogic: unknown command "${name}".${hint} Commands: ${COMMANDS.map((c) => c.name).join(", ")}.\n`);
  io.stderr(`Run "lakelogic --help" for usage.\n`);
  return EXIT.usage;
}

/** Runs the CLI and returns the exit code; never calls process.exit, so output is flushed. */
export async function main(argv: readonly string[], io: CliIO = processIO): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined) {
    io.stderr(rootHelp());
    return EXIT.usage;
  }
  if (first === "-h" || first === "--help") {
    io.stdout(rootHelp());
    return EXIT.ok;
  }
  if (first === "-v" || first === "--version") {
    io.stdout(`${packageInfo().version}\n`);
    return EXIT.ok;
  }
  if (first === "help") {
    const topic = rest[0];
    if (topic === undefined) {
      io.stdout(rootHelp());
      return EXIT.ok;
    }
    const entry = findCommand(topic);
    if (!entry) return unknownCommand(topic, io);
    io.stdout((await entry.load()).usage);
    return EXIT.ok;
  }
  if (first.startsWith("-")) {
    const guess = first.startsWith("--") ? didYouMean(first.slice(2), ["help", "version"]) : undefined;
    const hint = guess === undefined ? "" : ` Did you mean "--${guess}"?`;
    io.stderr(`lakelogic: unknown option "${first}".${hint} Run "lakelogic --help" for usage.\n`);
    return EXIT.usage;
  }
  const entry = findCommand(first);
  if (!entry) return unknownCommand(first, io);

  try {
    const command = await entry.load();
    return await command.run(rest, io);
  } catch (caught) {
    const err = explained(caught, entry.name, rest);
    if (err instanceof UsageError) {
      io.stderr(`lakelogic ${entry.name}: ${err.message}\nRun "lakelogic ${entry.name} --help" for usage.\n`);
      return EXIT.usage;
    }
    if (err instanceof LakeLogicError) {
      // Deliberate errors carry a message meant for people. Bad input (config, contract, a missing
      // optional package) is a usage error; a run that failed part-way is a failure.
      io.stderr(`lakelogic ${entry.name}: ${err.message}\n`);
      // A workflow that failed or that does not exist (from the Temporal client, not loaded here
      // unless used) is a failure too, and so is whatever a retry may get past (a lake another
      // process holds, a store that did not answer): that is not bad input.
      const failed = err instanceof StreamRunError || err instanceof TemporalUnreachableError || FAILURE_CODES.has(err.code) || err.retriable;
      return failed ? EXIT.failed : EXIT.usage;
    }
    const detail = err instanceof Error ? (err.stack ?? err.message) : String(err);
    io.stderr(`lakelogic ${entry.name}: internal error: ${detail}\n`);
    return EXIT.internal;
  }
}

/** The codes of the Temporal client's errors that are a failed command, not bad input. */
const FAILURE_CODES: ReadonlySet<string> = new Set(["STREAM_FAILED", "STREAM_NOT_FOUND"]);

/** Commands that need the Temporal SDK and a server. */
const TEMPORAL_COMMANDS: ReadonlySet<string> = new Set(["worker", "start", "schedule", "status", "pause", "resume", "stop"]);

/** The `--address` among a command's raw arguments (the command may not have parsed them). */
function addressArg(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") break;
    if (a === "--address") return args[i + 1];
    if (a.startsWith("--address=")) return a.slice("--address=".length);
  }
  return undefined;
}

/**
 * The SDK's own failures, said the way a user can act on: a missing @temporalio/* package (the
 * worker imports it statically) and a server that does not answer (the worker connects itself).
 */
function explained(err: unknown, command: string, args: readonly string[]): unknown {
  if (!TEMPORAL_COMMANDS.has(command)) return err;
  const missing = temporalMissingError(err, command);
  if (missing) return missing;
  if (!(err instanceof LakeLogicError) && isConnectFailure(err)) {
    let address: string;
    try {
      address = temporalAddressOf(addressArg(args));
    } catch {
      return err;
    }
    return new TemporalUnreachableError(address, err instanceof Error ? err.message : String(err));
  }
  return err;
}

/**
 * The command's process warnings through the process logger (whichever --log-format and
 * --log-level set), one line each; `held`: those raised while the command loaded. Only for the
 * process the command owns (bin/lakelogic.js): `main()` run inside another program leaves its
 * warnings alone.
 */
export function routeWarnings(held: readonly Error[] = []): void {
  routeProcessWarnings(liveDefaultLogger, held);
}

if (isEntryPoint(import.meta.url)) {
  routeWarnings();
  process.exitCode = await main(process.argv.slice(2));
}
