// Fixtures of the SCIM tests: a workspace on a plan with room for members, a VERIFIED domain of its own
// (written straight to the database: the DNS proof is tests/sso's subject), a SCIM token made through the
// API, and a client that speaks application/scim+json with that token.
import crypto from 'node:crypto';
import type { TestApp } from '../helpers/app.js';
import { registerAndLogin, type Api, type ApiResponse, type Session } from '../helpers/http.js';
import { createWorkspace, upgradeWorkspace } from '../workspaces/helpers.js';

export const SCIM_CONTENT_TYPE = 'application/scim+json';

export interface ScimWorkspace {
  owner: Session;
  workspaceId: string;
  /** A domain the workspace has VERIFIED: addresses the directory may provision. */
  domain: string;
  token: string;
  tokenId: string;
  /** A SCIM call with the token. */
  scim: (method: string, path: string, body?: unknown) => Promise<ApiResponse>;
}

export const hex = (n = 4) => crypto.randomBytes(n).toString('hex');

export async function verifiedDomain(app: TestApp, workspaceId: string, domain = `corp-${hex()}.example`) {
  await app.deps.db
    .insertInto('workspace_domains')
    .values({
      workspace_id: workspaceId,
      domain,
      status: 'VERIFIED',
      verification_token: hex(8),
      verified_at: new Date(),
    })
    .execute();
  return domain;
}

export function scimClient(api: Api, token: string) {
  return (method: string, path: string, body?: unknown) =>
    api(method, `/scim/v2${path}`, {
      token,
      ...(body !== undefined
        ? { raw: JSON.stringify(body), headers: { 'content-type': SCIM_CONTENT_TYPE, accept: SCIM_CONTENT_TYPE } }
        : { headers: { accept: SCIM_CONTENT_TYPE } }),
    });
}

export async function scimWorkspace(app: TestApp, api: Api = app.api): Promise<ScimWorkspace> {
  const owner = await registerAndLogin(api, { prefix: 'scim-owner' });
  const workspaceId = await createWorkspace(app, owner.accessToken, `Directory ${hex()}`);
  await upgradeWorkspace(app, owner.accessToken, workspaceId);
  const domain = await verifiedDomain(app, workspaceId);
  const created = await api('POST', `/workspaces/${workspaceId}/scim/tokens`, {
    token: owner.accessToken,
    body: { name: 'Directory' },
  });
  if (created.status !== 201) throw new Error(`token create failed: ${created.status} ${created.text}`);
  const token: string = created.body.rawToken;
  return { owner, workspaceId, domain, token, tokenId: created.body.id, scim: scimClient(api, token) };
}
