/** Public surface of the contract layer. */
export { loadContract, parseContract, contractFromObject, defaultCheckpointKey, regexProblem } from "./load.js";
export type { LoadContractOptions } from "./load.js";
export { parseProcessingTime, runModeOfTrigger } from "./normalise/trigger.js";
export { ContractError, formatProblem } from "./errors.js";
export { checkContractSql, contractSqlProblems } from "./sql-bind.js";
export type { ContractProblem } from "./errors.js";
export {
  checkRuleExpression,
  analyzeRuleExpression,
  RuleExpressionError,
  ALLOWED_FUNCTIONS,
} from "./sql-guard.js";
export type { RuleExpressionOptions, RuleExpressionInfo } from "./sql-guard.js";
export { parseFieldType, TYPE_ALIASES } from "./field-types.js";
export { parseYaml, formatPath, MAX_CONTRACT_BYTES, MAX_YAML_ALIAS_COUNT } from "./yaml.js";
export type { YamlDoc, YamlPath, YamlPos, YamlSyntaxProblem } from "./yaml.js";
export type * from "./types.js";
