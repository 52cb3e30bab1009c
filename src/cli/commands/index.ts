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
  { name: "spark", summary: "Run a contract on Apache Spark Structured Streaming into Delta tables (SparkStreamSink)", load: async () => (await import("./spark.js")).sparkCommand },
  {
    name: "worker",
    summary: "Run a Temporal worker for stream workflows and their batches",
    load: async () => (await import("./worker.js")).workerCommand,
  },
  {
    name: "start",
    summary: "Start a stream as a Temporal workflow (lakelogic:<checkpointKey>)",
    load: async () => (await import("./start.js")).startCommand,
  },
  {
    name: "schedule",
    summary: "Create, delete or trigger a Temporal Schedule of available_now drains",
    load: async () => (await import("./schedule.js")).scheduleCommand,
  },
  {
    name: "status",
    summary: "Show a stream's state, cursor, counts and lag (or list running streams)",
    load: async () => (await import("./status.js")).statusCommand,
  },
  {
    name: "show",
    summary: "Show a contract's lake: tables, last commits, quarantine by rule, the stream's checkpoint",
    load: async () => (await import("./show.js")).showCommand,
  },
  {
    name: "checkpoint",
    summary: "Import the checkpoints of a Python LakeLogic stream, so it continues here",
    load: async () => (await import("./checkpoint.js")).checkpointCommand,
  },
  {
    name: "lake",
    summary: "Maintain a contract's lake tables: compact small files, vacuum, checkpoint (lake maintain)",
    load: async () => (await import("./lake.js")).lakeCommand,
  },
  {
    name: "quarantine",
    summary: "List and show a contract's quarantined rows; replay them against the contract as it is now",
    load: async () => (await import("./quarantine.js")).quarantineCommand,
  },
  {
    name: "pause",
    summary: "Pause a stream after its in-flight batch",
    load: async () => (await import("./control.js")).controlCommand("pause"),
  },
  {
    name: "resume",
    summary: "Resume a paused stream",
    load: async () => (await import("./control.js")).controlCommand("resume"),
  },
  {
    name: "stop",
    summary: "Stop a stream gracefully (the in-flight batch commits first)",
    load: async () => (await import("./control.js")).controlCommand("stop"),
  },
];

export function findCommand(name: string): CommandEntry | undefined {
  return COMMANDS.find((c) => c.name === name);
}
