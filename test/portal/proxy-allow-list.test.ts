import { afterAll, describe, expect, it } from 'vitest';
import { createApp, registerDeveloper } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { PortalClient } from './support.js';

// The portal's proxy forwards only operations a developer's token is for, matched as the API's own
// router matches paths: no spelling of the sign-in, refresh, registration or operator endpoints
// reaches the API through it and hands its tokens to the page.

const server = await startTestServer();
const call = client(server.url);
afterAll(() => server.close());

async function signedIn() {
  const dev = await registerDeveloper(call);
  const portal = new PortalClient(server.url);
  const res = await portal.signIn(dev.email, dev.password);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { dev, portal };
}

describe('the proxy allow-list', () => {
  it.each([
    '/v1/Auth/Login',
    '/v1/AUTH/LOGIN',
    '/v1/auth/login/',
    '/v1/Auth/Login/',
    '/v1/%61uth/login',
    '/v1/auth/%6Cogin',
    '/v1//auth/login',
    '/v1/auth//login',
    '/v1/auth/Refresh',
    '/v1/auth/Register',
    '/v1/auth/Login/Verify-2FA',
  ])('refuses %s with a 404 and no tokens', async (path) => {
    const { dev, portal } = await signedIn();
    const res = await portal.api('POST', path, { body: { email: dev.email, password: dev.password, refresh_token: 'x', company_name: 'Acme' } });
    expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(404);
    expect(JSON.stringify(res.body)).not.toMatch(/access_token|refresh_token|challenge_token/);
  });

  it('refuses the operator endpoints however they are spelled', async () => {
    const { dev, portal } = await signedIn();
    for (const path of [`/v1/Admin/developers/${dev.id}/plan`, `/v1/ADMIN/developers/${dev.id}/plan/`]) {
      const res = await portal.api('PUT', path, { body: { plan: 'pro' } });
      expect(res.status, path).toBe(404);
    }
  });

  it('refuses public operations that need no developer token', async () => {
    const { portal } = await signedIn();
    expect((await portal.api('GET', '/v1/public/keys')).status).toBe(404);
    expect((await portal.api('GET', '/v1/openapi.json')).status).toBe(404);
  });

  it("forwards a developer's operations, in whatever spelling the API itself accepts", async () => {
    const { dev, portal } = await signedIn();
    const app = await createApp(call, dev);
    expect((await portal.api('GET', '/v1/apps')).status).toBe(200);
    expect((await portal.api('GET', '/v1/apps/')).status).toBe(200);
    const res = await portal.api('GET', `/v1/Apps/${app.id}`);
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(app.id);
    expect((await portal.api('GET', '/v1/auth/me')).body.id).toBe(dev.id);
  });
});
