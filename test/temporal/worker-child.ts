/**
 * A LakeLogic worker in its own process, for tests that kill workers (SIGKILL) and start new
 * ones. argv: <temporalAddress> [taskQueue]. Prints "ready <workerQueue>" once polling.
 */
import { createLakeLogicWorker } from "../../src/temporal/worker.js";

const [address, taskQueue] = process.argv.slice(2);
const worker = await createLakeLogicWorker({
  address,
  taskQueue: taskQueue ?? "lakelogic",
  shutdownGraceTimeMs: 5_000,
});
process.once("SIGTERM", () => worker.shutdown());
process.stdout.write(`ready ${worker.workerQueue}\n`);
await worker.run();
