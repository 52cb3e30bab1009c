import type { CliCommand } from "../types.js";

export interface CommandEntry {
  readonly name: string;
  /** One line for `lakelogic --help`. */
  readonly summary: string;
  /** Imported on use, so a command's dependencies load only when it runs. */
  load(): Promise<CliCommand>;
}

/**
 * Every subcommand, in help order. To add one (run, worker, start, status, …): write
 * src/cli/commands/<name>.ts exporting a CliCommand, and add a line here.
 */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "lint",
    summary: "Check contracts for unsafe settings (streaming with append, merge without a key, …)",
    load: async () => (await import("./lint.js")).lintCommand,
  },
  {
    name: "run",
    summary: "Run a stream in this process: validate, write, commit the cursor after each batch",
    load: async () => (await import("./run.js")).runCommand,
  },
];

export function findCommand(name: string): CommandEntry | undefined {
  return COMMANDS.find((c) => c.name === name);
}
