import { createLakeLogicWorker } from "../../temporal/worker.js";
import { parseCommandArgs } from "../args.js";
import { CONNECTION_FLAGS, CONNECTION_HELP } from "../temporal-flags.js";
import { EXIT, UsageError, type CliCommand } from "../types.js";

const usage = `Usage: lakelogic worker [options]

Run a LakeLogic Temporal worker: it executes stream workflows from the shared task queue and
their batches (fetch, validate, write, ack) on its own worker-specific queue. SIGTERM or SIGINT
shuts it down gracefully: in-flight activities get --shutdown-grace to finish.

Options:
${CONNECTION_HELP}
  --shutdown-grace SECONDS   (default 30)
  --max-concurrent N         batch activities at once on this worker (default 4)
  -h, --help
`;

export const workerCommand: CliCommand = {
  usage,
  async run(args, io) {
    const { values } = parseCommandArgs(args, {
      ...CONNECTION_FLAGS,
      "shutdown-grace": { type: "string" },
      "max-concurrent": { type: "string" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      io.stdout(usage);
      return EXIT.ok;
    }
    const grace = Number(values["shutdown-grace"] ?? "30");
    if (!Number.isFinite(grace) || grace < 0) throw new UsageError("--shutdown-grace must be a number of seconds >= 0");
    const concurrent = Number(values["max-concurrent"] ?? "4");
    if (!Number.isInteger(concurrent) || concurrent < 1) throw new UsageError("--max-concurrent must be a whole number >= 1");
    const worker = await createLakeLogicWorker({
      address: values.address,
      namespace: values.namespace,
      taskQueue: values["task-queue"],
      shutdownGraceTimeMs: grace * 1000,
      maxConcurrentActivities: concurrent,
    });
    const stop = () => worker.shutdown();
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
    io.stderr(`lakelogic worker: polling; batches run on ${worker.workerQueue}\n`);
    await worker.run();
    io.stderr("lakelogic worker: stopped\n");
    return EXIT.ok;
  },
};
