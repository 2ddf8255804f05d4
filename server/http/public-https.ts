import type Koa from 'koa';

/** A year: the usual HSTS lifetime; without includeSubDomains, other hosts of the domain are not bound by it. */
const HSTS = 'max-age=31536000';

/**
 * A deployment whose public address (PUBLIC_BASE_URL) is https is reached over TLS, whatever the
 * hop from its proxy to this process says. Its cookies are marked Secure even behind a proxy
 * LATCHKEY_TRUST_PROXY does not list (whose X-Forwarded-Proto is not believed), so a session cookie
 * never travels over plain http; and browsers are told to come back over https only (HSTS).
 * Cookie writers take `ctx.cookies.secure`, which this sets, rather than `ctx.secure`.
 */
export function publicHttps(publicBaseUrl: string): Koa.Middleware {
  const https = new URL(publicBaseUrl).protocol === 'https:';
  return async (ctx, next) => {
    if (https) {
      ctx.cookies.secure = true;
      ctx.set('Strict-Transport-Security', HSTS);
    }
    await next();
  };
}
