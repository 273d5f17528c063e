// The first-party client package covers the SCIM set-up routes: an owner creates, lists and revokes a
// token and replaces the role mappings through client/dist (built from the router's types), and a
// non-owner's refusal arrives as a typed ApiError.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { builtClient } from '../helpers/client-build.js';
import { signedInOf } from '../helpers/http.js';
import { inviteAndJoin } from '../workspaces/helpers.js';
import type * as ClientModule from '../../client/src/index.js';
import { scimWorkspace, type ScimWorkspace } from './helpers.js';

let app: TestApp;
let c: typeof ClientModule;
let ws: ScimWorkspace;

beforeAll(async () => {
  const dist = await builtClient();
  c = (await import(path.join(dist, 'index.js'))) as typeof ClientModule;
  app = await startTestApp();
  ws = await scimWorkspace(app);
}, 240_000);
afterAll(() => app?.close());

async function clientAs(email: string, password: string) {
  const api = c.createApiClient({ baseUrl: app.url });
  signedInOf(await api.session.signIn(email, password));
  return api;
}

describe('the client package and the SCIM set-up routes', () => {
  it('creates, lists and revokes a token, and replaces the role mappings', async () => {
    const api = await clientAs(ws.owner.email, ws.owner.password);
    const created = await api.scim.createToken.mutate({ workspaceId: ws.workspaceId, name: 'From the client' });
    expect(created.rawToken).toMatch(/^scim_/);
    const listed = await api.scim.tokens.query({ workspaceId: ws.workspaceId });
    expect(listed.items.map((t) => t.id)).toContain(created.id);
    expect(JSON.stringify(listed)).not.toContain(created.rawToken);
    const revoked = await api.scim.revokeToken.mutate({ workspaceId: ws.workspaceId, tokenId: created.id });
    expect(revoked.message).toEqual(expect.any(String));

    const put = await api.scim.putRoleMappings.mutate({
      workspaceId: ws.workspaceId,
      mappings: [{ group: 'Support', role: 'VIEWER' }],
    });
    expect(put.mappings).toEqual([{ group: 'Support', role: 'VIEWER' }]);
    expect(await api.scim.roleMappings.query({ workspaceId: ws.workspaceId })).toEqual(put);
  });

  it("answers an ADMIN's call with a typed PERMISSION_DENIED", async () => {
    const admin = await inviteAndJoin(app, ws.owner.accessToken, ws.workspaceId, 'ADMIN', 'scim-client-admin');
    const api = await clientAs(admin.email, admin.password);
    const err = await api.scim.tokens.query({ workspaceId: ws.workspaceId }).catch((e: unknown) => e);
    expect(c.isApiError(err, 'PERMISSION_DENIED')).toBe(true);
    expect((err as ClientModule.ApiError).status).toBe(403);
  });
});
