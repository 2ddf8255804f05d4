/**
 * The SDK's own sockets, time-outs and retry waits never keep the process alive (json-post.ts), so
 * a call the app awaits holds it here instead, for as long as it runs: its wait behind a background
 * refresh included. Without that, a top-level `await license.activate(key)` with nothing else
 * pending would see Node exit mid-call.
 */
const FOREVER_MS = 2 ** 31 - 1;

export async function holdingProcess<T>(work: () => Promise<T>): Promise<T> {
  const hold = setInterval(() => undefined, FOREVER_MS);
  try {
    return await work();
  } finally {
    clearInterval(hold);
  }
}
