import type { LogFields } from "../observe/logger.js";
import type { BatchReport, StreamRunSummary } from "../sink/index.js";

/** The facts of the info line logged per committed batch when stderr is not a terminal. */
export function batchLogLine(
  key: string,
  b: Pick<BatchReport, "batchId" | "sourceCount" | "goodCount" | "badCount" | "supersededCount" | "durationMs" | "lag" | "progress">,
): LogFields {
  return {
    key,
    batch: b.batchId,
    records: b.sourceCount,
    good: b.goodCount,
    bad: b.badCount,
    superseded: b.supersededCount,
    durationMs: b.durationMs,
    lagRecords: b.lag?.records,
    lagBytes: b.lag?.bytes,
    lagOldestAgeMs: b.lag?.oldestAgeMs,
    progress: b.progress === undefined ? undefined : Number(b.progress.toFixed(4)),
  };
}

/** ` · ETA 1m 05s` from the fraction done and the time spent, when the end is known. */
export function eta(progress: number, elapsedMs: number): string {
  if (!(progress > 0) || progress >= 1) return "";
  const leftSecs = Math.round((elapsedMs * (1 - progress)) / progress / 1000);
  const h = Math.floor(leftSecs / 3600);
  const m = Math.floor((leftSecs % 3600) / 60);
  const s = leftSecs % 60;
  const text = h > 0 ? `${h}h ${String(m).padStart(2, "0")}m` : m > 0 ? `${m}m ${String(s).padStart(2, "0")}s` : `${s}s`;
  return ` ETA ${text}`;
}

const n = (x: number) => x.toLocaleString("en");

/** The run's summary as a person reads it (stdout, without --json). */
export function summaryText(s: StreamRunSummary): string {
  const secs = (s.finishedAt.getTime() - s.startedAt.getTime()) / 1000;
  const how = s.stoppedBy === "error" ? "FAILED" : `done (stopped by ${s.stoppedBy})`;
  const lines = [
    `lakelogic run ${how}: ${s.checkpointKey}`,
    `  batches     ${n(s.batches)} in ${secs.toFixed(1)} s`,
    `  records     ${n(s.sourceCount)}: good ${n(s.goodCount)}, quarantined ${n(s.badCount)}, superseded ${n(s.supersededCount)}`,
    `  totals      ${n(s.totals.sourceCount)} records since the stream began`,
    `  cursor      ${JSON.stringify(s.cursor)} (resumed from ${JSON.stringify(s.resumedFrom)})`,
  ];
  if (s.lag) {
    const parts = [
      s.lag.records !== undefined ? `${n(s.lag.records)} records` : "",
      s.lag.bytes !== undefined ? `${n(s.lag.bytes)} bytes` : "",
      s.lag.oldestAgeMs !== undefined ? `oldest ${(s.lag.oldestAgeMs / 1000).toFixed(1)} s` : "",
    ].filter(Boolean);
    if (parts.length) lines.push(`  lag         ${parts.join(", ")}`);
  }
  return lines.join("\n") + "\n";
}
