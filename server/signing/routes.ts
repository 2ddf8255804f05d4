import { z } from 'zod';
import { defineRoute } from '../http/route.js';
import type { Keyring } from './keyring.js';

const PublicJwk = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: z.string(),
  kid: z.string().describe('RFC 7638 thumbprint; JWS headers name their key with it'),
  alg: z.literal('EdDSA').optional(),
  use: z.literal('sig').optional(),
});

export function signingRoutes(keyring: Keyring) {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/public/keys',
      operationId: 'getSigningKeys',
      tag: 'Public',
      auth: 'none',
      rateLimit: 'general',
      summary: 'The JWK Set that verifies runtime tokens and update manifests; the first key signs, the others remain valid during a rotation',
      response: z.object({ keys: z.array(PublicJwk) }),
      handler: async ({ ctx }) => {
        // Keys change only on a restart with new configuration; clients may cache them briefly.
        ctx.set('Cache-Control', 'public, max-age=300');
        return keyring.jwks;
      },
    }),
  ];
}
