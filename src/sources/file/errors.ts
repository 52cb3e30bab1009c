import { NonRetriableError } from "../../errors.js";

/**
 * The file a file source's cursor points into is no longer there to read on from: the path holds
 * other content and the old file (renamed, or copied by `copytruncate`) is not beside it. Reading
 * the path from the old offset would skip or cut lines, and from the beginning could repeat them,
 * so the source refuses; a retry finds the same files.
 */
export class FileReplacedError extends NonRetriableError {
  constructor(
    readonly path: string,
    /** What the cursor pointed at and what was found instead. */
    readonly detail: string,
  ) {
    super(
      "FILE_REPLACED",
      `file ${path}: ${detail}. Reading on from the checkpoint could skip, cut or repeat lines, so the run stops. ` +
        `To read the file now at ${path} from its beginning, start over with a new checkpoint key ` +
        `(lakelogic run --checkpoint-key KEY; checkpointKey in code), or delete this key's checkpoint and run with ` +
        `--reset-checkpoint (resetCheckpoint: true).`,
    );
  }
}
