/**
 * The `lakelogic` command: `lakelogic <command> [args]`. Subcommands live in ./commands and are
 * registered in ./commands/index.ts. Runnable directly (`tsx src/cli/main.ts lint contracts`)
 * and through bin/lakelogic.js, which imports `main`.
 */
import { LakeLogicError } from "../errors.js";
import { StreamRunError } from "../sink/errors.js";
import { COMMANDS, findCommand } from "./commands/index.js";
import { isEntryPoint } from "./entry.js";
import { packageInfo } from "./package-info.js";
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
  io.stderr(`lakelogic: unknown command "${name}". Commands: ${COMMANDS.map((c) => c.name).join(", ")}.\n`);
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
    io.stderr(`lakelogic: unknown option "${first}". Run "lakelogic --help" for usage.\n`);
    return EXIT.usage;
  }
  const entry = findCommand(first);
  if (!entry) return unknownCommand(first, io);

  try {
    const command = await entry.load();
    return await command.run(rest, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`lakelogic ${entry.name}: ${err.message}\nRun "lakelogic ${entry.name} --help" for usage.\n`);
      return EXIT.usage;
    }
    if (err instanceof LakeLogicError) {
      // Deliberate errors carry a message meant for people. Bad input (config, contract, a missing
      // optional package) is a usage error; a run that failed part-way is a failure.
      io.stderr(`lakelogic ${entry.name}: ${err.message}\n`);
      return err instanceof StreamRunError ? EXIT.failed : EXIT.usage;
    }
    const detail = err instanceof Error ? (err.stack ?? err.message) : String(err);
    io.stderr(`lakelogic ${entry.name}: internal error: ${detail}\n`);
    return EXIT.internal;
  }
}

if (isEntryPoint(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
