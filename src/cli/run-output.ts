import type { LogFields } from "../observe/logger.js";
import { fieldsText } from "./output.js";
import type { RuleCount } from "../engine/types.js";
import type { RuleTotals } from "../pipeline/rule-tally.js";
import type { BatchReport, StreamRunSummary } from "../sink/index.js";

/** The facts of the info line logged per committed batch when stderr is not a terminal. */
export function batchLogLine(
  key: string,
  b: Pick<BatchReport, "batchId" | "sourceCount" | "goodCount" | "badCount" | "supersededCount" | "durationMs" | "lag" | "progress"> & { ruleCounts: readonly RuleCount[] },
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
    // The rules that failed rows in this batch, `rule=rows` comma-separated (none: left out).
    failedRules: b.ruleCounts.filter((r) => r.failed > 0).map((r) => `${r.ruleId}=${r.failed}`).join(",") || undefined,
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
  lines.push(...rulesText(s.rules));
  return lines.join("\n") + "\n";
}

/**
 * The run's rules, one line each: row rules that failed rows (those that failed none are summed
 * in one line), then every dataset rule with the batches it passed and failed.
 */
export function rulesText(rules: RuleTotals): string[] {
  const lines: string[] = [];
  const failing = rules.rows.filter((r) => r.failed > 0).sort((a, b) => b.failed - a.failed);
  const clean = rules.rows.length - failing.length;
  if (failing.length > 0 || clean > 0) lines.push("  rules");
  for (const r of failing) lines.push(`    ${r.ruleId} (${r.severity})  failed ${n(r.failed)}, passed ${n(r.passed)}`);
  if (clean > 0) lines.push(`    ${n(clean)} other row rule${clean === 1 ? "" : "s"} failed no rows`);
  for (const d of rules.dataset) {
    const verdict = d.failedBatches > 0 ? `FAILED in ${n(d.failedBatches)} of ${n(d.failedBatches + d.passedBatches)} batch${d.failedBatches + d.passedBatches === 1 ? "" : "es"}, last: ${d.lastMessage}` : `passed in ${n(d.passedBatches)} batch${d.passedBatches === 1 ? "" : "es"}`;
    lines.push(`    ${d.ruleId} (dataset, ${d.severity})  ${verdict}`);
  }
  return lines;
}

/** A workflow's status or result for people: its fields one per line, its rules as the run summary shows them. */
export function streamFieldsText(o: { rules?: RuleTotals }): string {
  const { rules, ...fields } = o;
  const lines = rules ? rulesText(rules) : [];
  return fieldsText(fields) + (lines.length ? lines.map((l) => l.slice(2)).join("\n") + "\n" : "");
}
