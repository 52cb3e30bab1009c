/**
 * The Python package's own example contracts (its sdist, `lakelogic` 1.84.0, provisioned by
 * scripts/provision-python-examples.sh) whose format is delta, each run once through `lakelogic
 * run` in this process with a small NDJSON input made from its declared fields: the good rows land
 * in its Delta table, the row missing a required field in its quarantine. The placeholders the
 * examples leave to the user (`{data_root}`, `{catalog}`, …) get values with `--var`, as a user
 * gives them. Contracts that cannot run are listed with the reason, and the list is asserted.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { loadContract } from "../../src/contract/index.js";
import type { Contract } from "../../src/contract/types.js";
import { countDelta, declaredFormat, deltaTables, isContract, records, SDIST, varsFor, walk } from "./python-examples.js";

const tmp = mkdtempSync(join(tmpdir(), "lakelogic-pydelta-"));
const cwd = process.cwd();
afterAll(() => {
  process.chdir(cwd);
  rmSync(tmp, { recursive: true, force: true });
});

/** Contracts that do not run here, and why (a substring of the load error names the cause). */
const NO_KEY = "strategy merge (from _system.yaml materialization.silver) without a primary_key: refused, as the Python package refuses it";
const EXCEPTIONS: Record<string, string> = {
  "examples/reference/silver.annotated.yaml": "a rule reads amount_gbp, a column its transformations derive; transformations are not run here",
  "examples/reference/bronze.annotated.yaml": "quarantine.format: parquet beside a delta table: a quarantine under a path is written in the table's format here",
  ...Object.fromEntries(
    [
      "marketing/google_ads/contracts/silver/silver_google_ads_campaigns_v1.0.yaml",
      "marketing/google_analytics/contracts/silver/silver_google_analytics_sessions_v1.0.yaml",
      "marketing/hubspot/contracts/silver/silver_hubspot_email_campaigns_v1.0.yaml",
      "marketing/meta_ads/contracts/silver/silver_meta_ads_campaigns_v1.0.yaml",
      "operations/checkr/contracts/silver/silver_checkr_driver_licences_v1.0.yaml",
      "operations/checkr/contracts/silver/silver_checkr_driver_verifications_v1.0.yaml",
      "operations/zendesk/contracts/silver/silver_zendesk_support_tickets_v1.0.yaml",
      "payments/stripe/contracts/silver/silver_stripe_charges_v1.0.yaml",
      "payments/stripe/contracts/silver/silver_stripe_payouts_v1.0.yaml",
      "payments/stripe/contracts/silver/silver_stripe_refunds_v1.0.yaml",
    ].map((f) => [`examples/colab/assets/domains_rideflow/${f}`, NO_KEY]),
  ),
};

/** What each reason's run says: the error that shows the reason is still the cause. */
const SYMPTOM: Record<string, RegExp> = {
  [EXCEPTIONS["examples/reference/silver.annotated.yaml"]!]: /amount_gbp is not a field of this contract/,
  [EXCEPTIONS["examples/reference/bronze.annotated.yaml"]!]: /quarantine\.format: "parquet" differs from materialization\.format delta/,
  [NO_KEY]: /strategy merge needs a primary_key/,
};

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  let code: number;
  try {
    code = await main(["run", ...argv], { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  } catch (err) {
    code = -1;
    stderr += String(err);
  }
  return { code, stdout, stderr };
}

describe("the Python package's delta example contracts", () => {
  const all = walk(SDIST).filter(isContract).sort();
  // Contract Studio's Jinja templates (`*_contract.yaml.j2` and kin): contracts only once rendered.
  const templates = walk(SDIST, [], /\.ya?ml\.j2$/).filter((f) => !/(system|domain)/.test(f)).length;

  it("runs each through lakelogic run, writing Delta tables", { timeout: 600_000 }, async () => {
    const results: Array<{ rel: string; ok: boolean; why?: string }> = [];
    const delta: string[] = [];
    const pending: Array<{ rel: string; root: string; good: number; bad: number; summary: { goodCount: number; badCount: number } }> = [];
    for (const file of all) {
      const rel = relative(SDIST, file);
      const root = join(tmp, String(results.length));
      mkdirSync(root, { recursive: true });
      const vars = varsFor(root);
      let contract: Contract;
      try {
        contract = await loadContract(file, { vars });
      } catch (err) {
        if (declaredFormat(file) === "delta") {
          delta.push(rel);
          results.push({ rel, ok: false, why: String((err as Error).message) });
        }
        continue;
      }
      if ((contract.materialization.declaredFormat ?? contract.materialization.format) !== "delta") continue;
      delta.push(rel);
      const input = records(contract);
      const events = join(root, "input.ndjson");
      writeFileSync(events, input.lines);
      const argv = [file, "--source", JSON.stringify({ type: "file", path: events }), "--target-path", join(root, "lake"), "--mode", "available_now", "--json"];
      for (const [k, v] of Object.entries(vars)) argv.push("--var", `${k}=${v}`);
      // Relative paths in a contract (a quarantine under data/quarantine) are the working directory's.
      process.chdir(root);
      const r = await run(argv);
      if (r.code !== 0) {
        results.push({ rel, ok: false, why: r.stderr.slice(-800) });
        continue;
      }
      const summary = JSON.parse(r.stdout.trim().split("\n").pop()!) as { goodCount: number; badCount: number };
      pending.push({ rel, root, good: input.good, bad: input.bad, summary });
      results.push({ rel, ok: true });
    }
    process.chdir(cwd);
    const failed = results.filter((r) => !r.ok);
    const ran = results.filter((r) => r.ok);
    // The counts docs/migrating-from-python.md states.
    expect({ contracts: all.length, delta: delta.length, ran: ran.length, exceptions: failed.length, templates }).toEqual({ contracts: 63, delta: 60, ran: 48, exceptions: 12, templates: 10 });
    expect(Object.fromEntries(failed.map((f) => [f.rel, EXCEPTIONS[f.rel] ?? f.why]))).toEqual(EXCEPTIONS);
    for (const f of failed) expect(f.why, f.rel).toMatch(SYMPTOM[EXCEPTIONS[f.rel]!]!);

    const tables = pending.map((p) => ({ ...p, tables: deltaTables(p.root) }));
    const counts = countDelta(tables.flatMap((t) => t.tables));
    for (const t of tables) {
      expect(t.summary, t.rel).toMatchObject({ goodCount: t.good, badCount: t.bad });
      const rows = Object.fromEntries(t.tables.map((u) => [relative(t.root, u), counts[u]]));
      const quarantine = Object.entries(rows).filter(([k]) => /quarantine/.test(k));
      const good = Object.entries(rows).filter(([k]) => !/quarantine/.test(k));
      expect(good.map(([, n]) => n), `${t.rel}: ${JSON.stringify(rows)}`).toEqual([t.good]);
      expect(quarantine.map(([, n]) => n), `${t.rel}: ${JSON.stringify(rows)}`).toEqual(t.bad > 0 ? [t.bad] : []);
    }
  });
});
