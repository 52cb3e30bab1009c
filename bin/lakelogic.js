#!/usr/bin/env node
// The `lakelogic` command. Runs the compiled CLI from dist/ when the package is built;
// in a dev checkout without a build it runs the TypeScript sources through tsx instead.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

// The command owns its stderr: process warnings go through its logger (one line each), never
// Node's own "(node:…) Warning: … (Use `node --trace-warnings …`)". Those raised while the CLI
// loads wait here for it.
process.removeAllListeners("warning");
const held = [];
const hold = (warning) => held.push(warning);
process.on("warning", hold);

const built = new URL("../dist/src/cli/main.js", import.meta.url);
const source = new URL("../src/cli/main.ts", import.meta.url);

async function load() {
  if (existsSync(fileURLToPath(built))) return import(built.href);
  if (!existsSync(fileURLToPath(source))) {
    throw new Error("lakelogic: neither dist/src/cli/main.js nor src/cli/main.ts was found; reinstall the package");
  }
  let register;
  try {
    ({ register } = await import("tsx/esm/api"));
  } catch {
    throw new Error('lakelogic: no build found; run "npm run build", or install tsx to run from source');
  }
  // The project's own tsconfig, whatever directory the command is started from.
  register({ tsconfig: fileURLToPath(new URL("../tsconfig.json", import.meta.url)) });
  return import(source.href);
}

try {
  const { main, routeWarnings } = await load();
  process.off("warning", hold);
  routeWarnings(held);
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  for (const w of held.splice(0)) process.stderr.write(`lakelogic: warning: ${w.name}: ${w.message}\n`);
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 3;
}
