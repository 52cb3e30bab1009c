/** Reading a contract (or a registry file beside it) from disk, under the size limit. */
import { open } from "node:fs/promises";
import { ContractError } from "./errors.js";
import { contractSizeMessage, MAX_CONTRACT_BYTES } from "./yaml.js";

/** The file's text; a file over `MAX_CONTRACT_BYTES` is refused before it is read. */
export async function readContractFile(file: string, what = "contract file"): Promise<string> {
  let size: number;
  let text: string;
  try {
    const handle = await open(file, "r");
    try {
      size = (await handle.stat()).size;
      text = size > MAX_CONTRACT_BYTES ? "" : await handle.readFile("utf8");
    } finally {
      await handle.close();
    }
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const message = code === "ENOENT" ? `${what} not found` : `cannot read the ${what} (${code ?? String(e)})`;
    throw new ContractError([{ path: "", message, file, expected: "a readable YAML file" }], { cause: e });
  }
  if (size > MAX_CONTRACT_BYTES) {
    throw new ContractError([{ path: "", message: contractSizeMessage(size), file, expected: "a smaller contract" }]);
  }
  return text;
}
