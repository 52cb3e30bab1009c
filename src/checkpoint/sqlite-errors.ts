import { statSync } from "node:fs";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import {
  CheckpointBusyError,
  CheckpointCannotOpenError,
  CheckpointDiskFullError,
  CheckpointNotADatabaseError,
  CheckpointReadOnlyError,
  CheckpointStoreError,
} from "./errors.js";

type SqliteError = InstanceType<typeof Database.SqliteError>;

/** A Node.js file system error (mkdir, stat). */
interface FsError extends Error {
  code: string;
  syscall: string;
  path?: string;
}

function isFsError(err: unknown): err is FsError {
  return (
    err instanceof Error &&
    typeof (err as Partial<FsError>).code === "string" &&
    typeof (err as Partial<FsError>).syscall === "string"
  );
}

/** The nearest ancestor of `dir` that exists and is not a directory: what stops mkdir. */
function fileInTheWay(dir: string): string | undefined {
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    try {
      if (!statSync(d).isDirectory()) return d;
    } catch {
      // Missing: look further up.
    }
  }
  return undefined;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The typed error for a failure of the SQLite checkpoint store at `path` while `doing` (e.g.
 * `opening`, `committing batch 3 of "orders"`): it names the file and says what to do. Errors
 * that are not about the file (a compare-and-set conflict, a cursor that cannot be encoded) are
 * returned as they are.
 */
export function checkpointStoreError(err: unknown, path: string, doing: string): unknown {
  if (err instanceof CheckpointStoreError) return err;
  if (err instanceof Database.SqliteError) return fromSqlite(err, path, doing);
  if (isFsError(err)) return fromFs(err, path, doing);
  return err;
}

function fromSqlite(err: SqliteError, path: string, doing: string): CheckpointStoreError {
  const options = { cause: err };
  // Extended codes (SQLITE_IOERR_WRITE, SQLITE_READONLY_DBMOVED, …) start with their primary code.
  const primary = /^SQLITE_[A-Z]+/.exec(err.code)?.[0] ?? err.code;
  const what = `${doing} failed: ${err.message} (${err.code})`;
  switch (primary) {
    case "SQLITE_NOTADB":
    case "SQLITE_CORRUPT":
      return new CheckpointNotADatabaseError(path, `${what}: the file is not a SQLite database, or it is damaged`, options);
    case "SQLITE_CANTOPEN":
      return cannotOpen(path, what, options);
    case "SQLITE_READONLY":
    case "SQLITE_PERM":
    case "SQLITE_AUTH":
      return new CheckpointReadOnlyError(path, what, options);
    case "SQLITE_FULL":
      return new CheckpointDiskFullError(path, `${what}: the disk is full`, options);
    case "SQLITE_BUSY":
    case "SQLITE_LOCKED":
      return new CheckpointBusyError(path, what, options);
    default:
      // I/O errors and anything unforeseen: a retry may help, as it may for any unknown error.
      return new CheckpointStoreError(path, `${what}. Check the file and the volume that holds it.`, {
        ...options,
        retriable: true,
      });
  }
}

function cannotOpen(path: string, what: string, options: { cause: unknown }): CheckpointStoreError {
  if (isDirectory(path)) {
    return new CheckpointCannotOpenError(
      path,
      `${what}: the path is a directory. Give the checkpoint store a file path, e.g. ${join(path, "checkpoints.sqlite")}.`,
      options,
    );
  }
  return new CheckpointCannotOpenError(
    path,
    `${what}: the file cannot be opened or created. Check that ${dirname(path)} is a directory you can write to.`,
    options,
  );
}

function fromFs(err: FsError, path: string, doing: string): CheckpointStoreError {
  const options = { cause: err };
  const at = err.path ?? dirname(path);
  const what = `${doing} failed: ${err.syscall} ${at}: ${err.code}`;
  switch (err.code) {
    case "ENOTDIR":
    case "EEXIST": {
      const blocker = fileInTheWay(dirname(path)) ?? at;
      return new CheckpointCannotOpenError(
        path,
        `${what}: ${blocker} is a file, so the store's directory ${dirname(path)} cannot be created. ` +
          "Move that file or give the checkpoint store another path.",
        options,
      );
    }
    case "EACCES":
    case "EPERM":
    case "EROFS":
      return new CheckpointReadOnlyError(path, what, options);
    case "ENOSPC":
    case "EDQUOT":
      return new CheckpointDiskFullError(path, `${what}: the disk is full`, options);
    default:
      return new CheckpointStoreError(path, `${what}. Check the path and the volume that holds it.`, {
        ...options,
        retriable: true,
      });
  }
}
