/**
 * `lakelogic run` with the crash hook: the same command, arguments and output as the binary, but
 * after each batch's write it prints `written <batchId>` and, with LL_HANG_AFTER_WRITE=1, waits
 * (for the test's SIGKILL) before the commit — so the kill lands between write and commit.
 *
 * argv: the arguments of `lakelogic run`.
 */
import { runStream } from "../../src/cli/commands/run.js";

const hang = process.env.LL_HANG_AFTER_WRITE === "1";
const code = await runStream(
  process.argv.slice(2),
  { stdout: (t) => void process.stdout.write(t), stderr: (t) => void process.stderr.write(t) },
  {
    hooks: {
      afterWrite: async (batchId) => {
        process.stdout.write(`written ${batchId}\n`);
        if (hang) await new Promise((r) => setTimeout(r, 600_000));
      },
    },
  },
);
process.exitCode = code;
