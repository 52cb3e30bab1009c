/**
 * Variables set in this process's environment for a suite, as a user's machine would have them
 * (credentials from the default chain, which helper processes inherit): `setEnv` returns what
 * puts the environment back.
 */
export function setEnv(vars: Record<string, string>): () => void {
  const saved = Object.entries(vars).map(([k, v]) => {
    const was = process.env[k];
    process.env[k] = v;
    return [k, was] as const;
  });
  return () => {
    for (const [k, was] of saved) {
      if (was === undefined) delete process.env[k];
      else process.env[k] = was;
    }
  };
}
