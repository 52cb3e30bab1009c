import { NonRetriableError } from "../errors.js";

/** Where a command writes; injectable so tests can run `main` in-process. */
export interface CliIO {
  stdout(text: string): void;
  stderr(text: string): void;
}

export const EXIT = {
  ok: 0,
  /** A finding at or above `--fail-on` (lint); the command's own failure for others. */
  failed: 1,
  /** Bad flags, values or paths. */
  usage: 2,
  /** A bug: an unexpected exception. */
  internal: 3,
} as const;


/** A subcommand, loaded only when it is invoked (so `lint` never loads Temporal). */
export interface CliCommand {
  /** Full help text for `lakelogic <name> --help`. */
  readonly usage: string;
  /** Returns the exit code; throws UsageError for bad input. */
  run(args: string[], io: CliIO): Promise<number>;
}

/** The command line is wrong; the dispatcher prints it with a pointer to `--help` and exits 2. */
export class UsageError extends NonRetriableError {
  constructor(message: string) {
    super("USAGE", message);
  }
}

/**
 * A command made of subcommands (`lakelogic lake maintain`, `lakelogic checkpoint import`): no
 * subcommand prints the usage (exit 2), `-h`/`--help` prints it (exit 0), an unknown one is a UsageError.
 */
export function subcommands(usage: string, table: Record<string, (args: string[], io: CliIO) => Promise<number>>): CliCommand {
  return {
    usage,
    async run(args, io) {
      const [sub, ...rest] = args;
      if (sub === undefined) {
        io.stderr(usage);
        return EXIT.usage;
      }
      if (sub === "-h" || sub === "--help") {
        io.stdout(usage);
        return EXIT.ok;
      }
      const run = Object.hasOwn(table, sub) ? table[sub] : undefined;
      if (!run) throw new UsageError(`unknown subcommand "${sub}"; expected: ${Object.keys(table).join(", ")}`);
      return run(rest, io);
    },
  };
}
