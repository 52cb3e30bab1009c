/**
 * `lakelogic run` for the chaos harness (scripts/chaos.ts): the same command and arguments as the
 * binary, announcing `written <batchId>` after each batch's write. With LL_HANG_ON_WRITE=<n> it
 * waits after the n-th write (for the harness's SIGKILL) before that batch's commit, so the kill
 * lands exactly between write and commit; earlier batches commit as usual.
 *
 * argv: the arguments of `lakelogic run`.
 */
import { runStream } from "../../src/cli/commands/run.js";

const hangOn = Number(process.env.LL_HANG_ON_WRITE ?? "0");
let writes = 0;
const code = await runStream(
  process.argv.slice(2),
  { stdout: (t) => void process.stdout.write(t), stderr: (t) => void process.stderr.write(t) },
  {
    hooks: {
      afterWrite: async (batchId) => {
        writes++;
        process.stdout.write(`written ${batchId}\n`);
        if (writes === hangOn) await new Promise((r) => setTimeout(r, 600_000));
      },
    },
  },
);
process.exitCode = code;
