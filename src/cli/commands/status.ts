import { existsSync } from "node:fs";
import { NonRetriableError } from "../../errors.js";
import { checkpointView, readCheckpoint } from "../../pipeline/inspect.js";
import type { CheckpointOption } from "../../pipeline/settings.js";
import type { Contract } from "../../contract/types.js";
import { parseCommandArgs } from "../args.js";
import { loadForCommand } from "../contract-load.js";
import { CONNECT_TIMEOUT_FLAG, CONNECT_TIMEOUT_HELP, connectStreamClient, TemporalNotInstalledError, TemporalUnreachableError, temporalAddressOf } from "../temporal-connect.js";
import { commandSettings, CONNECTION_FLAGS, CONNECTION_HELP, contractLoadOptionsOf } from "../temporal-flags.js";
import { streamFieldsText } from "../run-output.js";
import { fieldsText, JSON_FLAG, JSON_HELP, printResult } from "../output.js";
import { EXIT, UsageError, type CliCommand, type CliIO } from "../types.js";

const usage = `Usage: lakelogic status [KEY] [options]

With KEY (a checkpoint key, e.g. stream::orders): the stream's state, cursor, batch id, counts,
last commit and lag, from its workflow's status query. Without KEY: the running streams.

A stream run in a process (lakelogic run, StreamSink) has no workflow: give its checkpoint
store, and when the Temporal server has no workflow lakelogic:KEY (or does not answer), the
status comes from the checkpoint there (cursor, batch, counts, last commit). The first line
says where the answer came from ("source").

Options:
      --checkpoint LOCATION  the stream's checkpoint: a SQLite file, an object-store URI, or
                             "target" (in the lake; needs --contract)
      --contract CONTRACT    the stream's contract: KEY defaults to its checkpoint key, and the
                             checkpoint to where \`lakelogic run\` keeps it
      --target-path DIR      with --contract: the lake (default: the contract's, else ./lake)
      --var NAME=VALUE       with --contract: a value for its {NAME} placeholders (repeatable)
      --env NAME             with --contract: the environments.<NAME> of _system.yaml
${JSON_HELP}
${CONNECTION_HELP}
${CONNECT_TIMEOUT_HELP}
  -h, --help

Exit codes: 0 shown, 1 no stream named KEY (no workflow and no checkpoint), or the Temporal
server does not answer and no checkpoint was given; 2 usage.
`;

const FLAGS = {
  ...CONNECTION_FLAGS,
  ...CONNECT_TIMEOUT_FLAG,
  ...JSON_FLAG,
  checkpoint: { type: "string" },
  contract: { type: "string" },
  "target-path": { type: "string" },
  var: { type: "string", multiple: true },
  env: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** Where a stream's checkpoint is, when the command line says. */
interface LocalStream {
  checkpoint: CheckpointOption;
  lake?: { contract: Contract; targetPath: string };
}

export const statusCommand: CliCommand = {
  usage,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs(args, FLAGS);
    if (values.help) {
      io.stdout(usage);
      return EXIT.ok;
    }
    if (positionals.length > 1) throw new UsageError("expected at most one checkpoint KEY");
    if (values.contract === undefined && (values["target-path"] !== undefined || values.var !== undefined || values.env !== undefined)) {
      throw new UsageError("--target-path, --var and --env go with --contract");
    }
    let key = positionals[0];
    let local: LocalStream | undefined;
    if (values.contract !== undefined) {
      if (!existsSync(values.contract)) throw new UsageError(`contract not found: ${values.contract}`);
      const contract = await loadForCommand(values.contract, contractLoadOptionsOf(values), io, "status");
      // Resolved as `lakelogic run` resolves them: the same key, checkpoint and lake.
      const settings = commandSettings(contract, {
        ...(key !== undefined ? { checkpointKey: key } : {}),
        ...(values.checkpoint !== undefined ? { checkpoint: values.checkpoint } : {}),
        ...(values["target-path"] !== undefined ? { targetPath: values["target-path"] } : {}),
      });
      key = settings.key;
      local = { checkpoint: settings.checkpoint, lake: { contract, targetPath: settings.targetPath } };
    } else if (values.checkpoint !== undefined) {
      if (key === undefined) throw new UsageError("--checkpoint needs the stream's KEY (or --contract CONTRACT)");
      local = { checkpoint: values.checkpoint };
    }

    let client;
    try {
      client = await connectStreamClient("status", values);
    } catch (err) {
      if (local === undefined || key === undefined || !(err instanceof TemporalUnreachableError || err instanceof TemporalNotInstalledError)) throw err;
      const why = err instanceof TemporalUnreachableError ? `the Temporal server at ${err.address} does not answer` : "the Temporal SDK is not installed";
      return fromCheckpoint(io, values.json, key, local, why);
    }
    try {
      if (key === undefined) {
        const streams = await client.list();
        printResult(io, values.json, streams, () =>
          streams.length === 0 ? "no running streams\n" : streams.map((s) => fieldsText(s as unknown as Record<string, unknown>)).join("\n"),
        );
        return EXIT.ok;
      }
      try {
        const status = await client.status(key);
        const workflowId = `lakelogic:${key}`;
        const shown = { source: `workflow ${workflowId}`, ...status };
        printResult(io, values.json, { source: "workflow", workflowId, ...status }, () => streamFieldsText(shown));
        return EXIT.ok;
      } catch (err) {
        if ((err as { code?: unknown }).code !== "STREAM_NOT_FOUND") throw err;
        const why = `the Temporal server at ${temporalAddressOf(values.address)} has no workflow lakelogic:${key}`;
        if (local === undefined) {
          throw new NonRetriableError(
            "STREAM_NOT_FOUND",
            `no stream named ${key}: ${why}. For a stream run in a process (lakelogic run, StreamSink), give --contract CONTRACT or --checkpoint LOCATION to read its checkpoint`,
          );
        }
        return fromCheckpoint(io, values.json, key, local, why);
      }
    } finally {
      await client.close();
    }
  },
};

/** The stream's status from its checkpoint store; "no stream named KEY" (exit 1) when it holds none. */
async function fromCheckpoint(io: CliIO, json: boolean | undefined, key: string, local: LocalStream, why: string): Promise<number> {
  const { location, record } = await readCheckpoint(local.checkpoint, key, local.lake);
  if (!record) throw new NonRetriableError("STREAM_NOT_FOUND", `no stream named ${key}: ${why}, and ${location} holds no checkpoint for it`);
  const view = checkpointView(key, location, record);
  const status = {
    source: "checkpoint store",
    location,
    note: why,
    checkpointKey: key,
    cursor: view.cursor,
    batchId: view.batchId,
    sourceCount: record.totals.sourceCount,
    goodCount: record.totals.goodCount,
    badCount: record.totals.badCount,
    supersededCount: record.totals.supersededCount,
    lastCommitAt: view.committedAt,
    lastBatch: view.batch,
    sinceCommitMs: view.lag?.sinceCommitMs,
    writerId: view.writerId,
  };
  printResult(io, json, status, () => fieldsText({ ...status, source: `checkpoint store ${location}`, location: undefined }));
  return EXIT.ok;
}
