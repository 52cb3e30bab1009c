/** A Parquet dataset directory's durable files and its single-writer lock. */
import { randomBytes } from "node:crypto";
import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LakeBusyError } from "./errors.js";
import { fsyncPath } from "./quarantine-files.js";

/** Write a file durably under its final name: temp name, fsync, rename, fsync the directory. */
export function writeFileAtomic(dir: string, name: string, content: string, renamed: () => void): void {
  const tmp = join(dir, `${name}.${randomBytes(4).toString("hex")}.tmp`);
  try {
    writeFileSync(tmp, content);
    fsyncPath(tmp, "r+");
    renameSync(tmp, join(dir, name));
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  renamed();
  fsyncPath(dir, "r");
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** One writer per dataset: an O_EXCL lock file holding the pid; a dead pid's lock is stale. */
export function takeLock(path: string): void {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(path, String(process.pid), { flag: "wx" });
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const pid = Number(readFileSync(path, "utf8").trim());
    if (Number.isInteger(pid) && pid > 0 && pidAlive(pid)) {
      throw new LakeBusyError(
        `${path}: process ${pid}${pid === process.pid ? " (this process)" : ""} is writing this dataset; ` +
          "one writer per table — close the other writer first",
      );
    }
    rmSync(path, { force: true });
  }
  throw new LakeBusyError(`${path}: could not take the writer lock`);
}
