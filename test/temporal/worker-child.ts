/**
 * A LakeLogic worker in its own process, for tests that kill workers (SIGKILL) and start new
 * ones. argv: <temporalAddress> [taskQueue] [workflowBundlePath]. Prints "ready <workerQueue>"
 * once polling. A pre-built bundle saves each new worker several seconds of webpack.
 */
import { createLakeLogicWorker } from "../../src/temporal/worker.js";

const [address, taskQueue, bundlePath] = process.argv.slice(2);
const worker = await createLakeLogicWorker({
  address,
  taskQueue: taskQueue ?? "lakelogic",
  ...(bundlePath ? { workflowBundle: { codePath: bundlePath } } : {}),
  shutdownGraceTimeMs: 5_000,
});
process.once("SIGTERM", () => worker.shutdown());
process.stdout.write(`ready ${worker.workerQueue}\n`);
await worker.run();
