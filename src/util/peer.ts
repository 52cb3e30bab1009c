import { MissingDependencyError } from "../errors.js";

/**
 * Import an optional peer dependency, or fail with a MissingDependencyError that names the
 * package and the feature needing it. The same rule as the sources' `requirePeer`, kept here so
 * the layers below src/sources (checkpoint stores) can load cloud SDKs lazily too.
 */
export async function loadPeer<T>(packageName: string, feature: string): Promise<T> {
  try {
    return (await import(packageName)) as T;
  } catch (err) {
    const code = (err as { code?: string }).code;
    // Only the package itself missing: a dependency missing inside it is a broken install, its own error.
    if ((code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") && namesPackage(err, packageName)) {
      throw new MissingDependencyError(packageName, feature, { cause: err });
    }
    throw err;
  }
}

/** Node says "Cannot find package 'name' imported from …" (ESM) or "Cannot find module 'name'" (CJS). */
function namesPackage(err: unknown, packageName: string): boolean {
  return err instanceof Error && err.message.includes(`'${packageName}'`);
}
