/**
 * Loading the contract a command runs: the loader's warnings are printed (a misspelt key is
 * ignored by the loader, so the user must hear about it), and a YAML file that is not a contract
 * is refused before anything is read or started.
 */
import { ContractError } from "../contract/errors.js";
import { loadContract, type LoadContractOptions } from "../contract/load.js";
import type { Contract, ContractWarning } from "../contract/types.js";
import { notAContractReason } from "../lint/rules/loader.js";
import type { CliIO } from "./types.js";

/** `file:line: message`, or the message alone when the warning has no position. */
export function warningLine(w: ContractWarning, fallbackFile: string): string {
  const file = w.loc?.file ?? fallbackFile;
  return w.loc ? `${file}:${w.loc.line}: ${w.message}` : `${file}: ${w.message}`;
}

/**
 * Load `path` for `lakelogic <command>`: a ContractError (exit 2) when it does not load or is not a
 * contract; otherwise the contract, after printing each loader warning to stderr as
 * `lakelogic <command>: warning: <file>:<line>: <message>`.
 */
export async function loadForCommand(path: string, options: LoadContractOptions, io: CliIO, command: string): Promise<Contract> {
  const contract = await loadContract(path, options);
  const reason = notAContractReason(contract);
  if (reason !== undefined) {
    throw new ContractError([
      { path: "", file: path, message: `is not a contract: ${reason}`, expected: "a data contract that declares its fields under model.fields" },
    ]);
  }
  for (const w of contract.warnings) io.stderr(`lakelogic ${command}: warning: ${warningLine(w, path)}\n`);
  return contract;
}
