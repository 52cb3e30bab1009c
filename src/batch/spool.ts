import { randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { deserialize, serialize } from "node:v8";

/**
 * Claim-check storage for batches that pass between activities on one worker (I4: rows never
 * travel through Temporal history, only the spool reference does). V8's structured
 * serialisation keeps bigint, Date, Uint8Array and nested values exactly, and is fast; the
 * files are local, short-lived and read by the same Node version that wrote them.
 */
export class Spool {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  async put(kind: string, value: unknown): Promise<string> {
    const ref = `${kind}-${randomUUID()}.v8`;
    // Write-then-rename is unnecessary: a reader only learns the name after the write finished.
    await writeFile(join(this.dir, ref), serialize(value));
    return ref;
  }

  async get<T>(ref: string): Promise<T> {
    if (ref.includes("/") || ref.includes("\\")) throw new Error(`invalid spool reference ${ref}`);
    try {
      return deserialize(await readFile(join(this.dir, ref))) as T;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new SpoolMissingError(ref, this.dir);
      throw err;
    }
  }

  async drop(...refs: Array<string | null | undefined>): Promise<void> {
    await Promise.all(refs.filter((r): r is string => !!r).map((r) => rm(join(this.dir, r), { force: true })));
  }

  /** Remove the spool; called on a worker's graceful shutdown. */
  destroy(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Remove sibling spools left by workers that died more than `olderThanMs` ago. */
  static sweep(parent: string, olderThanMs: number): void {
    let entries: string[] = [];
    try {
      entries = readdirSync(parent);
    } catch {
      return;
    }
    const cutoff = Date.now() - olderThanMs;
    for (const name of entries) {
      const path = join(parent, name);
      try {
        if (statSync(path).mtimeMs < cutoff) rmSync(path, { recursive: true, force: true });
      } catch {
        // Another worker swept it first.
      }
    }
  }
}

/** The batch's spool is not on this worker (it died, or the batch moved): restart the batch. */
export class SpoolMissingError extends Error {
  constructor(ref: string, dir: string) {
    super(`spool ${ref} is not on this worker (${dir}); the batch must be fetched again`);
    this.name = "SpoolMissingError";
  }
}
