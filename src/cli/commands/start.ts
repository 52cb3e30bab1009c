import { parseCommandArgs } from "../args.js";
import { loadForCommand } from "../contract-load.js";
import { CONNECT_TIMEOUT_FLAG, CONNECT_TIMEOUT_HELP, connectStreamClient, importTemporalClient } from "../temporal-connect.js";
import { CONNECTION_FLAGS, CONNECTION_HELP, CONTRACT_SETTINGS_HELP, STREAM_FLAGS, STREAM_HELP, streamInputOf, contractLoadOptionsOf } from "../temporal-flags.js";
import { streamFieldsText } from "../run-output.js";
import { JSON_FLAG, JSON_HELP, printResult } from "../output.js";
import { EXIT, UsageError, type CliCommand } from "../types.js";

const usage = `Usage: lakelogic start CONTRACT [options]

Start a stream as a Temporal workflow (id lakelogic:<checkpointKey>). A second start of the
same stream is refused while the first runs. Paths are made absolute: the workers must see them.

Options:
${STREAM_HELP}
      --wait               wait for the workflow's result and print it
${JSON_HELP}
${CONNECTION_HELP}
${CONNECT_TIMEOUT_HELP}
  -h, --help

${CONTRACT_SETTINGS_HELP}
`;

export const startCommand: CliCommand = {
  usage,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, {
      ...STREAM_FLAGS,
      ...CONNECTION_FLAGS,
      ...CONNECT_TIMEOUT_FLAG,
      ...JSON_FLAG,
      wait: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      io.stdout(usage);
      return EXIT.ok;
    }
    if (positionals.length !== 1) throw new UsageError("expected exactly one CONTRACT path");
    const contract = await loadForCommand(positionals[0]!, contractLoadOptionsOf(values), io, "start");
    const input = streamInputOf(positionals[0]!, values, contract, { fallback: "continuous", fromContract: true });
    const { StreamClient } = await importTemporalClient("start");
    const client = await connectStreamClient("start", values);
    try {
      const handle = await client.start(input);
      const key = await StreamClient.checkpointKeyOf(input);
      const started = { workflowId: handle.workflowId, runId: handle.firstExecutionRunId, checkpointKey: key };
      printResult(io, values.json, started, () => `started ${key} as workflow ${handle.workflowId} (run ${handle.firstExecutionRunId})\n`);
      if (values.wait) {
        const result = await client.result(key);
        printResult(io, values.json, result, () => streamFieldsText(result));
      }
      return EXIT.ok;
    } finally {
      await client.close();
    }
  },
};

