/**
 * Runs Temporal commands in a process where no @temporalio/* package can be resolved (a module
 * hook hides them, as if the optional peers were not installed) and prints each exit code and
 * stderr as one JSON line.
 */
import { register } from "node:module";

const hook = `export async function resolve(specifier, context, next) {
  if (specifier.startsWith("@temporalio/")) {
    const err = new Error("Cannot find package '" + specifier + "' imported from " + context.parentURL);
    err.code = "ERR_MODULE_NOT_FOUND";
    throw err;
  }
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);

const { main } = await import("../../src/cli/main.js");
const commands = JSON.parse(process.argv[2] ?? "[]") as string[][];
for (const argv of commands) {
  let stderr = "";
  let stdout = "";
  const code = await main(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  process.stdout.write(`${JSON.stringify({ argv, code, stderr, stdout })}\n`);
}
