import { generate, generateSecret, generateURI, verify } from 'otplib';

/** TOTP (RFC 6238, SHA-1, 6 digits, 30 s) as authenticator apps expect it. */
export const totp = {
  newSecret: (): string => generateSecret({ length: 20 }),

  provisioningUri: (secret: string, email: string): string => generateURI({ issuer: 'Latchkey', label: email, secret }),

  /** The RFC 6238 time step the code matched (±1 step for clock drift), or null. */
  async matchStep(secret: string, code: string, nowMs: number): Promise<number | null> {
    const result = await verify({ secret, token: code, epoch: Math.floor(nowMs / 1000), epochTolerance: 30 });
    return result.valid && 'timeStep' in result ? result.timeStep : null;
  },

  /** The current code, for tests and the CLI. */
  codeAt: (secret: string, nowMs: number): Promise<string> => generate({ secret, epoch: Math.floor(nowMs / 1000) }),
};
