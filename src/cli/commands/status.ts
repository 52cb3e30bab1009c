import { parseCommandArgs } from "../args.js";
import { CONNECT_TIMEOUT_FLAG, CONNECT_TIMEOUT_HELP, connectStreamClient } from "../temporal-connect.js";
import { CONNECTION_FLAGS, CONNECTION_HELP } from "../temporal-flags.js";
import { streamFieldsText } from "../run-output.js";
import { fieldsText, JSON_FLAG, JSON_HELP, printResult } from "../output.js";
import { EXIT, UsageError, type CliCommand } from "../types.js";

const usage = `Usage: lakelogic status [KEY] [options]

With KEY (a checkpoint key, e.g. stream::orders): the stream's state, cursor, batch id, counts,
last commit and lag, from its workflow's status query. Without KEY: the running streams.

Options:
${JSON_HELP}
${CONNECTION_HELP}
${CONNECT_TIMEOUT_HELP}
  -h, --help
`;

export const statusCommand: CliCommand = {
  usage,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, { ...CONNECTION_FLAGS, ...CONNECT_TIMEOUT_FLAG, ...JSON_FLAG, help: { type: "boolean", short: "h" } });
    if (values.help) {
      io.stdout(usage);
      return EXIT.ok;
    }
    if (positionals.length > 1) throw new UsageError("expected at most one checkpoint KEY");
    const client = await connectStreamClient("status", values);
    try {
      const key = positionals[0];
      if (key) {
        const status = await client.status(key);
        printResult(io, values.json, status, () => streamFieldsText(status));
      } else {
        const streams = await client.list();
        printResult(io, values.json, streams, () =>
          streams.length === 0 ? "no running streams\n" : streams.map((s) => fieldsText(s as unknown as Record<string, unknown>)).join("\n"),
        );
      }
      return EXIT.ok;
    } finally {
      await client.close();
    }
  },
};
