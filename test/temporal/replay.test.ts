import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { historyFromJSON } from "@temporalio/common/lib/proto-utils.js";
import { Worker } from "@temporalio/worker";
import { describe, expect, it } from "vitest";
import { workflowBundle } from "./support.js";

/**
 * Replays histories recorded from real runs (scripts/record-histories.ts) against the current
 * workflow code. A change to workflows/ that alters the commands a history recorded — the
 * order or type of activities, timers, continue-as-new — fails here, before it can break
 * streams already running in production. No server is needed.
 */
const dir = fileURLToPath(new URL("../fixtures/histories/", import.meta.url));
/** processing-time/ and maintain/ hold the histories of test/temporal/processing-time.test.ts and maintain.test.ts, which replay them. */
const files = readdirSync(dir).filter((f) => f.endsWith(".json"));

describe("stream workflow replay", () => {
  it("has a recorded history for every path", () => {
    expect(files.sort()).toEqual(
      [
        "activity-retry.json",
        "available-now.json",
        "continuous-can-first-run.json",
        "continuous-can-last-run.json",
        "lost-worker-resync.json",
        "pause-resume.json",
        "queue-ack.json",
        "rules-can-first-run.json",
        "rules-can-last-run.json",
        "stop.json",
      ].sort(),
    );
  });

  it.each(files)("replays %s deterministically", async (file) => {
    const history = historyFromJSON(JSON.parse(readFileSync(dir + file, "utf8")));
    await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, file);
  });
});
