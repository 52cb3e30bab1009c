import { StreamClient } from "../../temporal/client.js";
import { parseCommandArgs } from "../args.js";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionOf } from "../temporal-flags.js";
import { EXIT, type CliCommand } from "../types.js";

const usage = `Usage: lakelogic status [KEY] [options]

With KEY (a checkpoint key, e.g. stream::orders): the stream's state, cursor, batch id, counts,
last commit and lag, from its workflow's status query. Without KEY: the running streams.

Options:
${CONNECTION_HELP}
  -h, --help
`;

export const statusCommand: CliCommand = {
  usage,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, { ...CONNECTION_FLAGS, help: { type: "boolean", short: "h" } });
    if (values.help) {
      io.stdout(usage);
      return EXIT.ok;
    }
    const client = await StreamClient.connect(connectionOf(values));
    try {
      const key = positionals[0];
      const out = key ? await client.status(key) : await client.list();
      io.stdout(JSON.stringify(out, null, 2) + "\n");
      return EXIT.ok;
    } finally {
      await client.close();
    }
  },
};
