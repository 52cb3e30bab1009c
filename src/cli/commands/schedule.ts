import { loadContract } from "../../contract/index.js";
import { ConfigError } from "../../errors.js";
import { StreamClient, parseDuration } from "../../temporal/client.js";
import { parseCommandArgs } from "../args.js";
import { CONNECTION_FLAGS, CONNECTION_HELP, CONTRACT_SETTINGS_HELP, STREAM_FLAGS, STREAM_HELP, connectionOf, streamInputOf, contractLoadOptionsOf } from "../temporal-flags.js";
import { EXIT, UsageError, type CliCommand } from "../types.js";

const usage = `Usage: lakelogic schedule create NAME CONTRACT --every 15m [options]
       lakelogic schedule delete NAME
       lakelogic schedule trigger NAME

A Temporal Schedule that runs an available_now drain of CONTRACT on a cadence, with overlap
policy SKIP (a drain still running is never doubled). Each drain starts from the checkpoint
store, wherever the last one stopped.

Options:
      --every DURATION     30s, 15m, 1h, 1d (create)
${STREAM_HELP}
${CONNECTION_HELP}
  -h, --help

${CONTRACT_SETTINGS_HELP}
`;

export const scheduleCommand: CliCommand = {
  usage,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, {
      ...STREAM_FLAGS,
      ...CONNECTION_FLAGS,
      every: { type: "string" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      io.stdout(usage);
      return EXIT.ok;
    }
    const [action, name, contractPath] = positionals;
    if (!action || !["create", "delete", "trigger"].includes(action)) {
      throw new UsageError("expected create, delete or trigger");
    }
    if (!name) throw new UsageError(`schedule ${action} needs a NAME`);
    const client = await StreamClient.connect(connectionOf(values));
    try {
      if (action === "create") {
        if (!contractPath) throw new UsageError("schedule create needs NAME and CONTRACT");
        if (!values.every) throw new UsageError("schedule create needs --every, e.g. --every 15m");
        let everyMs: number;
        try {
          everyMs = parseDuration(values.every);
        } catch (err) {
          throw new UsageError(`--every: ${err instanceof ConfigError ? err.detail : (err as Error).message}`);
        }
        if (values.mode && values.mode !== "available_now") {
          throw new UsageError("schedules run available_now drains; a continuous stream is started once with lakelogic start");
        }
        const contract = await loadContract(contractPath, contractLoadOptionsOf(values));
        // The schedule is the cadence: each run is a drain, whatever trigger the contract names.
        const input = streamInputOf(contractPath, values, contract, { fallback: "available_now", fromContract: false });
        await client.createSchedule(name, input, everyMs);
        io.stdout(JSON.stringify({ schedule: name, everyMs, overlap: "SKIP" }) + "\n");
      } else if (action === "delete") {
        await client.deleteSchedule(name);
        io.stdout(JSON.stringify({ schedule: name, deleted: true }) + "\n");
      } else {
        await client.triggerSchedule(name);
        io.stdout(JSON.stringify({ schedule: name, triggered: true }) + "\n");
      }
      return EXIT.ok;
    } finally {
      await client.close();
    }
  },
};
