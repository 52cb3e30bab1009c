// Import rules for src/, activities/ and workflows/ (`npm run deps`).
// Data flows one way through src/: each layer may import only its own layer or lower ones.
/** @type {string[][]} Path patterns of src/, lowest layer first. */
const LAYERS = [
  ["^src/util/", "^src/observe/", "^src/errors\\.ts$"],
  ["^src/contract/"],
  ["^src/checkpoint/", "^src/engine/"],
  ["^src/lake/"],
  // src/python (the Python package's forms) shares the sources layer: src/sources/registry.ts
  // registers its `type: stream` transport, and its connector names extend the transports.
  ["^src/sources/", "^src/python/"],
  ["^src/pipeline/"],
  ["^src/sink/", "^src/temporal/", "^src/spark/"],
  ["^src/lint/", "^src/index\\.ts$"],
  ["^src/cli/"],
];
const any = (patterns) => `(${patterns.join("|")})`;
const above = (n) => any(LAYERS.slice(n + 1).flat());
const PIPELINE_AND_BELOW = any(LAYERS.slice(0, 6).flat());

const upward = LAYERS.slice(0, -1).map((layer, n) => ({
  name: `layer-${n}-no-upward-import`,
  comment: `L${n} (${layer.join(", ")}) may import only its own layer or lower ones.`,
  severity: "error",
  from: { path: any(layer) },
  to: { path: above(n) },
}));

/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import cycles, type-only imports included.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "not-to-unresolvable",
      comment: "An import that does not resolve would escape every other rule.",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
    ...upward,
    {
      name: "src-unlayered",
      comment: "Every module of src/ belongs to a layer: add a new folder to LAYERS.",
      severity: "error",
      from: { path: "^src/", pathNot: any(LAYERS.flat()) },
      to: {},
    },
    {
      name: "src-not-to-dev-trees",
      comment: "The library does not import tests, benchmarks, scripts or examples.",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(test|bench|scripts|examples)/" },
    },
    {
      name: "pipeline-not-to-temporal-adapters",
      comment: "activities/ and workflows/ sit above src/pipeline: only src/temporal and higher reach them.",
      severity: "error",
      from: { path: PIPELINE_AND_BELOW },
      to: { path: "^(activities|workflows)/" },
    },
    {
      name: "sources-core-no-transport",
      comment: "src/sources/core is the base of every transport and imports none of them.",
      severity: "error",
      from: { path: "^src/sources/core/" },
      to: { path: "^src/(sources|python)/", pathNot: "^src/sources/core/" },
    },
    {
      name: "sources-transport-isolated",
      comment: "A transport folder imports only src/sources/core, itself and lower layers.",
      severity: "error",
      from: { path: "^src/sources/([^/]+)/", pathNot: "^src/sources/core/" },
      to: { path: "^src/(sources|python)/", pathNot: "^src/sources/(core|$1)/" },
    },
    {
      name: "python-stream-isolated",
      comment: "src/python/stream is a transport (`type: stream`): it imports only src/sources/core, itself and lower layers.",
      severity: "error",
      from: { path: "^src/python/stream/" },
      to: { path: "^src/(sources|python)/", pathNot: "^src/(sources/core|python/stream)/" },
    },
    {
      name: "sources-via-entry",
      comment:
        "Outside src/sources and src/python (whose connector names extend the transports), transports " +
        "(src/python/stream too) are reached through src/sources/*.ts or core/ only.",
      severity: "error",
      from: { path: "^(src|activities|workflows)/", pathNot: "^src/(sources|python)/" },
      to: { path: "^src/(sources/[^/]+|python/stream)/", pathNot: "^src/sources/core/" },
    },
    {
      name: "workflows-sandbox",
      comment:
        "Workflow code is bundled into Temporal's sandbox: besides type-only imports it may use only " +
        "workflows/, @temporalio/workflow, src/checkpoint/codec.ts, src/pipeline/trigger.ts and src/pipeline/rule-tally.ts (no Node built-ins, no other package).",
      severity: "error",
      from: { path: "^workflows/" },
      to: {
        pathNot: "(^workflows/|^src/checkpoint/codec\\.ts$|^src/pipeline/(trigger|rule-tally)\\.ts$|node_modules/@temporalio/workflow/)",
        dependencyTypesNot: ["type-only"],
      },
    },
    {
      name: "workflow-codec-pure",
      comment: "src/checkpoint/codec.ts, src/pipeline/trigger.ts and src/pipeline/rule-tally.ts are bundled with the workflows, so they import nothing at run time.",
      severity: "error",
      from: { path: "^src/(checkpoint/codec|pipeline/(trigger|rule-tally))\\.ts$" },
      to: { dependencyTypesNot: ["type-only"] },
    },
    {
      name: "activities-below-temporal",
      comment: "activities/ uses src/ up to src/pipeline; src/temporal imports the activities (type-only too would be a cycle).",
      severity: "error",
      from: { path: "^activities/" },
      to: { path: "^src/", pathNot: PIPELINE_AND_BELOW },
    },
    {
      name: "activities-workflows-type-only",
      comment: "Activities share the workflows' types only; workflow code must not run in an activity.",
      severity: "error",
      from: { path: "^activities/" },
      to: { path: "^workflows/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "activities-packages",
      comment: "Of the packages, activities/ uses only @temporalio/activity; the rest belongs in src/.",
      severity: "error",
      from: { path: "^activities/" },
      to: { path: "node_modules/", pathNot: "node_modules/@temporalio/activity/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Type-only imports are kept, so they count for cycles and layers.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"],
    },
  },
};
