/**
 * DPAPI (CurrentUser) called in this process: `CryptProtectData` and `CryptUnprotectData` of
 * crypt32.dll through koffi, a foreign-function library the SDK lists as an optional dependency
 * (prebuilt for Windows x64, ia32 and arm64). It replaces a PowerShell start (a few hundred ms) at
 * every start of an activated app with a call of about a millisecond. The blobs are the ones
 * PowerShell's `ProtectedData` makes (no entropy, CurrentUser), so a secret protected either way
 * unprotects either way. Where koffi is absent (an app bundled without its node_modules, a protected
 * single executable) or does not load, there is none, and the PowerShell way is used.
 */
import type * as Koffi from 'koffi';
import { importOptional } from '../optional-module.js';

export interface DpapiCalls {
  /** The output, or undefined when DPAPI refused, failed or did not answer in time. */
  protect(data: Uint8Array): Promise<Buffer | undefined>;
  unprotect(blob: Uint8Array): Promise<Buffer | undefined>;
}

/** `CRYPTPROTECT_UI_FORBIDDEN`: never a prompt (a blob made with a prompt requirement fails instead). */
const UI_FORBIDDEN = 0x1;

/**
 * As long as PowerShell's way is given (os-key-store.ts): DPAPI may wait for a domain controller
 * to hand out the user's master key. The call runs on a worker thread meanwhile, never the app's.
 */
const CALL_TIMEOUT_MS = 5_000;

/** Binds the two calls; undefined where koffi or crypt32.dll is not there. */
export async function loadDpapiCalls(): Promise<DpapiCalls | undefined> {
  const { module: koffi } = await importOptional<typeof Koffi>('koffi');
  if (!koffi) return undefined;
  try {
    const crypt32 = koffi.load('crypt32.dll');
    const kernel32 = koffi.load('kernel32.dll');
    // Anonymous: a named type is registered once per process, and a second start in the same process would collide.
    const blobType = koffi.struct({ cbData: 'uint32', pbData: 'void *' });
    const signature = (name: string, description: string) =>
      crypt32.func('__stdcall', name, 'bool', [koffi.pointer(blobType), description, koffi.pointer(blobType), 'void *', 'void *', 'uint32', koffi.out(koffi.pointer(blobType))]);
    const cryptProtectData = signature('CryptProtectData', 'const char16_t *');
    const cryptUnprotectData = signature('CryptUnprotectData', 'void *');
    const localFree = kernel32.func('__stdcall', 'LocalFree', 'void *', ['void *']);

    /** The system's copy of an output zeroed (it may be the plain secret) and freed; the bytes, copied out first. */
    const takeOutput = (output: { cbData?: number; pbData?: unknown }): Buffer => {
      const type = koffi.array('uint8', output.cbData ?? 0, 'Typed');
      const bytes = Buffer.from(koffi.decode(output.pbData, type) as Uint8Array);
      koffi.encode(output.pbData, type, new Uint8Array(output.cbData ?? 0));
      localFree(output.pbData);
      return bytes;
    };
    /** One call on a worker thread, raced against the timeout; an output that comes too late is still zeroed and freed. */
    const run = (call: ReturnType<typeof signature>, input: Uint8Array): Promise<Buffer | undefined> =>
      new Promise((resolve) => {
        let late = false;
        const timer = setTimeout(() => {
          late = true;
          resolve(undefined);
        }, CALL_TIMEOUT_MS).unref();
        const output: { cbData?: number; pbData?: unknown } = {};
        try {
          call.async({ cbData: input.length, pbData: input }, null, null, null, null, UI_FORBIDDEN, output, (err: unknown, ok: unknown) => {
            clearTimeout(timer);
            let bytes: Buffer | undefined;
            try {
              bytes = !err && ok && output.pbData ? takeOutput(output) : undefined;
            } catch {
              bytes = undefined;
            }
            if (late) bytes?.fill(0);
            else resolve(bytes);
          });
        } catch {
          clearTimeout(timer);
          resolve(undefined);
        }
      });
    return { protect: (data) => run(cryptProtectData, data), unprotect: (blob) => run(cryptUnprotectData, blob) };
  } catch {
    // Not Windows, or a koffi build that cannot call into this system.
    return undefined;
  }
}
