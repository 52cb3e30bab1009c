/**
 * `lakelogic quarantine replay` with crash hooks: the same command and output, but it prints
 * `written <batch>` after each batch's write (checkpoint outside the lake) and `committed <batch>`
 * after each commit, before the batch's outcomes reach the replay log; with LL_HANG=written or
 * LL_HANG=committed and LL_HANG_BATCH=N it waits there (for the test's SIGKILL) at batch N.
 *
 * argv: the arguments of `lakelogic quarantine replay`.
 */
import { runReplay } from "../../src/cli/commands/quarantine.js";

const hangAt = process.env.LL_HANG;
const hangBatch = Number(process.env.LL_HANG_BATCH ?? "1");
const stop = async (where: string, batchId: number) => {
  process.stdout.write(`${where} ${batchId}\n`);
  if (hangAt === where && batchId === hangBatch) await new Promise((r) => setTimeout(r, 600_000));
};
const code = await runReplay(
  process.argv.slice(2),
  { stdout: (t) => void process.stdout.write(t), stderr: (t) => void process.stderr.write(t) },
  { hooks: { afterWrite: (b) => stop("written", b), beforeLog: (b) => stop("committed", b) } },
);
process.exitCode = code;
