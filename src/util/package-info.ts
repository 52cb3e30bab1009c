import { readFileSync } from "node:fs";

export interface PackageInfo {
  name: string;
  version: string;
  homepage?: string;
}

let cached: PackageInfo | undefined;

/**
 * The package's own package.json, found by walking up from this module: it sits two levels up
 * from src/util in a checkout and three from dist/src/util in a build.
 */
export function packageInfo(): PackageInfo {
  if (cached) return cached;
  let dir = new URL(".", import.meta.url);
  for (let i = 0; i < 6; i++) {
    try {
      const pkg = JSON.parse(readFileSync(new URL("package.json", dir), "utf8")) as Partial<PackageInfo>;
      if (pkg.name === "lakelogic" && typeof pkg.version === "string") {
        cached = {
          name: pkg.name,
          version: pkg.version,
          ...(typeof pkg.homepage === "string" ? { homepage: pkg.homepage } : {}),
        };
        return cached;
      }
    } catch {
      // Not here (or unreadable): keep walking up.
    }
    dir = new URL("..", dir);
  }
  cached = { name: "lakelogic", version: "0.0.0" };
  return cached;
}
