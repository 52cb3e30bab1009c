/**
 * Give `target[key]` the value of `get()`, evaluated on first read (each read forwards to
 * `get`, which memoises if it must). Used for good rows, which an engine may build only when
 * someone asks for them: copying such an object with spread or Object.assign reads the value.
 */
export function defineLazy<T extends object, K extends keyof T>(target: T, key: K, get: () => T[K]): T {
  return Object.defineProperty(target, key, { enumerable: true, configurable: true, get });
}
