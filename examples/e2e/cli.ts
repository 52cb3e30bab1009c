/** Running `lakelogic` as a reader of the walk-through would, printing each command first. */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const cliPath = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

export interface CliRun {
  child: ChildProcess;
  /** Exit code (null when killed) and everything it printed. */
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }>;
}

/** Quote an argument for the printed command line (what a reader would paste into a shell). */
function shown(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

export function lakelogic(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): CliRun {
  console.log(`   $ lakelogic ${args.map(shown).join(" ")}`);
  const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), cliPath, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => resolve({ code, signal, output }));
  });
  return { child, done };
}

/** Run to the end; a non-zero exit is an error carrying the command's output. */
export async function lakelogicOk(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const { code, signal, output } = await lakelogic(args, cwd, env).done;
  if (code !== 0) throw new Error(`lakelogic ${args[0]} exited with ${code ?? signal}:\n${output.slice(-3000)}`);
  return output;
}
