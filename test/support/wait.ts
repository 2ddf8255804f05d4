/** Checks `condition` every 100 ms, at most `attempts` times; fails with `what` if it never holds. */
export async function eventually<T>(what: string, condition: () => Promise<T | undefined | false>, attempts = 100): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const value = await condition();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}
