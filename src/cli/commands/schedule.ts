import { resolve } from "node:path";
import { ConfigError } from "../../errors.js";
import { isUri, resolveLakeConfig } from "../../lake/config.js";
import type { MaintainWorkflowInput } from "../../../workflows/types.js";
import { parseCommandArgs } from "../args.js";
import { loadForCommand } from "../contract-load.js";
import { CONNECT_TIMEOUT_FLAG, CONNECT_TIMEOUT_HELP, connectStreamClient, importTemporalClient } from "../temporal-connect.js";
import { CONNECTION_FLAGS, CONNECTION_HELP, CONTRACT_SETTINGS_HELP, STREAM_FLAGS, STREAM_HELP, streamInputOf, contractLoadOptionsOf } from "../temporal-flags.js";
import { JSON_FLAG, JSON_HELP, printResult } from "../output.js";
import { EXIT, UsageError, type CliCommand } from "../types.js";
import { retainHoursOf } from "./lake.js";

/**
 * The stream flags a schedule takes: every run is an available_now drain, so the help offers no
 * other mode and no processing_time interval (both are refused).
 */
const SCHEDULE_STREAM_HELP = STREAM_HELP.split("\n")
  .filter((line) => !/^\s+(-m, --mode|--interval)\b/.test(line) && !/^\s+\(default: the contract's processing_time\)$/.test(line))
  .join("\n");

const usage = `Usage: lakelogic schedule create NAME CONTRACT --every 15m [options]
       lakelogic schedule create NAME CONTRACT --every 1h --maintain [maintenance options]
       lakelogic schedule delete NAME
       lakelogic schedule trigger NAME

A Temporal Schedule that runs an available_now drain of CONTRACT on a cadence, with overlap
policy SKIP (a drain still running is never doubled). Each drain starts from the checkpoint
store, wherever the last one stopped. A continuous stream is started once with lakelogic start.
With --maintain the schedule runs lake maintenance of CONTRACT's tables instead (what lakelogic
lake maintain does), beside its stream, which keeps running.

Options:
      --every DURATION     30s, 15m, 1h, 1d (create)
      --maintain           run lake maintenance (compaction, vacuum, checkpoint), not a drain;
                           takes --target-path, --var, --env and the two below
      --retain-hours N     --maintain, delta: vacuum retention (default 168)
      --allow-short-retention
                           --maintain, delta: accept a retention below the table's minimum
${SCHEDULE_STREAM_HELP}
${JSON_HELP}
${CONNECTION_HELP}
${CONNECT_TIMEOUT_HELP}
  -h, --help

${CONTRACT_SETTINGS_HELP}
`;

const ACTIONS = ["create", "delete", "trigger"] as const;

export const scheduleCommand: CliCommand = {
  usage,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, {
      ...STREAM_FLAGS,
      ...CONNECTION_FLAGS,
      ...CONNECT_TIMEOUT_FLAG,
      ...JSON_FLAG,
      every: { type: "string" },
      maintain: { type: "boolean" },
      "retain-hours": { type: "string" },
      "allow-short-retention": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      io.stdout(usage);
      return EXIT.ok;
    }
    // Every argument is checked before the SDK loads or the server is asked.
    const [action, name, contractPath, ...extra] = positionals;
    if (!action || !(ACTIONS as readonly string[]).includes(action)) {
      throw new UsageError(`expected create, delete or trigger${action ? ` (got "${action}")` : ""}`);
    }
    if (!name) throw new UsageError(`schedule ${action} needs a NAME`);
    if (action !== "create" && contractPath !== undefined) throw new UsageError(`schedule ${action} takes only a NAME`);
    if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
    const maintain = values.maintain === true;
    if (!maintain || action !== "create") {
      const maintainFlags: ReadonlyArray<"retain-hours" | "allow-short-retention" | "maintain"> = ["retain-hours", "allow-short-retention", ...(action !== "create" ? (["maintain"] as const) : [])];
      const flag = maintainFlags.find((f) => values[f] !== undefined);
      if (flag) throw new UsageError(`--${flag} goes with schedule create --maintain`);
    }
    if (action === "create") {
      if (!contractPath) throw new UsageError("schedule create needs NAME and CONTRACT");
      if (!values.every) throw new UsageError("schedule create needs --every, e.g. --every 15m");
      if (maintain) {
        const streamOnly = (Object.keys(STREAM_FLAGS) as Array<keyof typeof STREAM_FLAGS>).find(
          (f) => !["target-path", "var", "env"].includes(f) && values[f] !== undefined,
        );
        if (streamOnly) throw new UsageError(`--${streamOnly} describes a stream; a --maintain schedule takes --target-path, --var and --env`);
        retainHoursOf(values["retain-hours"]);
      }
      if (values.mode && values.mode !== "available_now") {
        throw new UsageError("schedules run available_now drains; a continuous stream is started once with lakelogic start");
      }
    }
    const { parseDuration } = await importTemporalClient("schedule");
    let create: { everyMs: number; input: ReturnType<typeof streamInputOf> } | undefined;
    let maintenance: { everyMs: number; input: MaintainWorkflowInput } | undefined;
    if (action === "create") {
      let everyMs: number;
      try {
        everyMs = parseDuration(values.every!);
      } catch (err) {
        throw new UsageError(`--every: ${err instanceof ConfigError ? err.detail : (err as Error).message}`);
      }
      const loadOptions = contractLoadOptionsOf(values);
      const contract = await loadForCommand(contractPath!, loadOptions, io, "schedule");
      if (maintain) maintenance = { everyMs, input: maintainInputOf(contractPath!, values, contract, loadOptions) };
      // The schedule is the cadence: each run is a drain, whatever trigger the contract names.
      else create = { everyMs, input: streamInputOf(contractPath!, values, contract, { fallback: "available_now", fromContract: false }) };
    }
    const client = await connectStreamClient("schedule", values);
    try {
      if (maintenance) {
        await client.createMaintenanceSchedule(name, maintenance.input, maintenance.everyMs);
        printResult(io, values.json, { schedule: name, everyMs: maintenance.everyMs, overlap: "SKIP", maintain: true }, () => `created schedule ${name}: lake maintenance every ${values.every}, overlapping runs skipped\n`);
      } else if (create) {
        await client.createSchedule(name, create.input, create.everyMs);
        printResult(io, values.json, { schedule: name, everyMs: create.everyMs, overlap: "SKIP" }, () => `created schedule ${name}: an available_now run every ${values.every}, overlapping runs skipped\n`);
      } else if (action === "delete") {
        await client.deleteSchedule(name);
        printResult(io, values.json, { schedule: name, deleted: true }, () => `deleted schedule ${name}\n`);
      } else {
        await client.triggerSchedule(name);
        printResult(io, values.json, { schedule: name, triggered: true }, () => `triggered schedule ${name}\n`);
      }
      return EXIT.ok;
    } finally {
      await client.close();
    }
  },
};

/**
 * The maintenance workflow's input: paths made absolute for the workers, the lake settings
 * checked here (a format or target the lake refuses fails now, not at the first run).
 */
function maintainInputOf(
  contractPath: string,
  values: { "target-path"?: string; "retain-hours"?: string; "allow-short-retention"?: boolean },
  contract: Parameters<typeof resolveLakeConfig>[0],
  loadOptions: ReturnType<typeof contractLoadOptionsOf>,
): MaintainWorkflowInput {
  const retainHours = retainHoursOf(values["retain-hours"]);
  const targetPath = values["target-path"];
  resolveLakeConfig(contract, targetPath === undefined ? {} : { targetPath });
  return {
    contract: resolve(contractPath),
    ...(targetPath !== undefined ? { targetPath: isUri(targetPath) ? targetPath : resolve(targetPath) } : {}),
    ...(retainHours !== undefined ? { retainHours } : {}),
    ...(values["allow-short-retention"] ? { allowShortRetention: true } : {}),
    ...(loadOptions.vars ? { vars: loadOptions.vars } : {}),
    ...(loadOptions.environment ? { environment: loadOptions.environment } : {}),
  };
}
