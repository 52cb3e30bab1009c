import { parseCommandArgs } from "../args.js";
import { CONNECT_TIMEOUT_FLAG, CONNECT_TIMEOUT_HELP, connectStreamClient } from "../temporal-connect.js";
import { CONNECTION_FLAGS, CONNECTION_HELP } from "../temporal-flags.js";
import { JSON_FLAG, JSON_HELP, printResult } from "../output.js";
import { EXIT, UsageError, type CliCommand } from "../types.js";

const WHAT = {
  pause: "Pause a stream after its in-flight batch; it holds its position until resumed.",
  resume: "Resume a paused stream.",
  stop: "Stop a stream gracefully: the in-flight batch finishes and commits, then the workflow completes.",
} as const;

/** `pause`, `resume` and `stop` are one command with three signals. */
export function controlCommand(signal: keyof typeof WHAT): CliCommand {
  const usage = `Usage: lakelogic ${signal} KEY [options]

${WHAT[signal]} KEY is the checkpoint key (e.g. stream::orders).

Options:
${JSON_HELP}
${CONNECTION_HELP}
${CONNECT_TIMEOUT_HELP}
  -h, --help
`;
  return {
    usage,
    async run(args, io) {
      const { values, positionals } = parseCommandArgs(args, { ...CONNECTION_FLAGS, ...CONNECT_TIMEOUT_FLAG, ...JSON_FLAG, help: { type: "boolean", short: "h" } });
      if (values.help) {
        io.stdout(usage);
        return EXIT.ok;
      }
      if (positionals.length !== 1) throw new UsageError("expected exactly one checkpoint KEY");
      const client = await connectStreamClient(signal, values);
      try {
        await client.signal(positionals[0]!, signal);
        printResult(io, values.json, { checkpointKey: positionals[0], signal }, () => `sent ${signal} to ${positionals[0]}\n`);
        return EXIT.ok;
      } finally {
        await client.close();
      }
    },
  };
}
