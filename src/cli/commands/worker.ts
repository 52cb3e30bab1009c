import { createLakeLogicWorker } from "../../temporal/worker.js";
import { parseCommandArgs } from "../args.js";
import { CONNECTION_FLAGS, CONNECTION_HELP } from "../temporal-flags.js";
import { EXIT, UsageError, type CliCommand } from "../types.js";
import { gracefulStop } from "../signals.js";
import { OBSERVE_FLAGS, observeHelp, portFlag, setupObservability } from "../observe-flags.js";

const usage = `Usage: lakelogic worker [options]

Run a LakeLogic Temporal worker: it executes stream workflows from the shared task queue and
their batches (fetch, validate, write, ack) on its own worker-specific queue. SIGTERM or SIGINT
shuts it down gracefully: in-flight activities get --shutdown-grace to finish; then it exits 143
(SIGTERM) or 130 (SIGINT). A second signal ends it at once.

Options:
${CONNECTION_HELP}
  --shutdown-grace SECONDS   (default 30)
  --max-concurrent N         batch activities at once on this worker (default 4)
${observeHelp("  ", 27, [
  [
    "--sdk-metrics-port N",
    "serve the Temporal SDK's own worker metrics (task slots, poll and",
    "schedule latencies) at http://HOST:N/metrics, its own port",
    "(HOST: --metrics-host, default 127.0.0.1)",
  ],
])}
  -h, --help

Logs go to stderr: a line when it starts polling, one per stream it opens and one per batch it
commits (info).
`;

export const workerCommand: CliCommand = {
  usage,
  async run(args, io) {
    const { values } = parseCommandArgs(args, {
      ...CONNECTION_FLAGS,
      "shutdown-grace": { type: "string" },
      "max-concurrent": { type: "string" },
      ...OBSERVE_FLAGS,
      "sdk-metrics-port": { type: "string" },
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
    const sdkPort = portFlag("--sdk-metrics-port", values["sdk-metrics-port"]);
    const host = values["metrics-host"] ?? "127.0.0.1";
    const sdkMetricsAddress = sdkPort === undefined ? undefined : `${host.includes(":") ? `[${host}]` : host}:${sdkPort}`;
    const observe = await setupObservability(values, io);
    try {
      const worker = await createLakeLogicWorker({
        address: values.address,
        namespace: values.namespace,
        taskQueue: values["task-queue"],
        shutdownGraceTimeMs: grace * 1000,
        maxConcurrentActivities: concurrent,
        logger: observe.logger,
        ...(observe.metrics ? { metrics: observe.metrics } : {}),
        ...(sdkMetricsAddress ? { sdkMetricsAddress } : {}),
      });
      const stop = gracefulStop((signal) => {
        observe.logger.info("stopping after the batch in flight", { signal, graceMs: grace * 1000 });
        worker.shutdown();
      });
      if (sdkMetricsAddress) observe.logger.info("serving Temporal SDK metrics", { url: `http://${sdkMetricsAddress}/metrics` });
      const { address, namespace, taskQueue, workerQueue } = worker;
      observe.logger.info("lakelogic worker: polling", { address, namespace, taskQueue, workerQueue });
      try {
        await worker.run();
      } finally {
        stop.detach();
      }
      observe.logger.info("lakelogic worker: stopped");
      return stop.exitCode();
    } finally {
      await observe.close();
    }
  },
};
