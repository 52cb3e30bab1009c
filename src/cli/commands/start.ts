import { loadContract } from "../../contract/index.js";
import { StreamClient } from "../../temporal/client.js";
import { parseCommandArgs } from "../args.js";
import { CONNECTION_FLAGS, CONNECTION_HELP, CONTRACT_SETTINGS_HELP, STREAM_FLAGS, STREAM_HELP, connectionOf, streamInputOf, contractLoadOptionsOf } from "../temporal-flags.js";
import { EXIT, UsageError, type CliCommand } from "../types.js";

const usage = `Usage: lakelogic start CONTRACT [options]

Start a stream as a Temporal workflow (id lakelogic:<checkpointKey>). A second start of the
same stream is refused while the first runs. Paths are made absolute: the workers must see them.

Options:
${STREAM_HELP}
      --wait               wait for the workflow's result and print it
${CONNECTION_HELP}
  -h, --help

${CONTRACT_SETTINGS_HELP}
`;

export const startCommand: CliCommand = {
  usage,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, {
      ...STREAM_FLAGS,
      ...CONNECTION_FLAGS,
      wait: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      io.stdout(usage);
      return EXIT.ok;
    }
    if (positionals.length !== 1) throw new UsageError("expected exactly one CONTRACT path");
    const contract = await loadContract(positionals[0]!, contractLoadOptionsOf(values));
    const input = streamInputOf(positionals[0]!, values, contract, { fallback: "continuous", fromContract: true });
    const client = await StreamClient.connect(connectionOf(values));
    try {
      const handle = await client.start(input);
      const key = await StreamClient.checkpointKeyOf(input);
      io.stdout(JSON.stringify({ workflowId: handle.workflowId, runId: handle.firstExecutionRunId, checkpointKey: key }) + "\n");
      if (values.wait) io.stdout(JSON.stringify(await client.result(key)) + "\n");
      return EXIT.ok;
    } finally {
      await client.close();
    }
  },
};

