// Fixtures of the single sign-on tests: a workspace with an owner and a domain made VERIFIED directly in the
// database (the DNS verification itself is tested with the domain routes), and SAML connections to the
// loopback identity provider of tests/helpers/saml-idp.ts.
import crypto from 'node:crypto';
import type { TestApp } from '../helpers/app.js';
import { registerAndLogin, type Session } from '../helpers/http.js';
import type { TestSamlIdp } from '../helpers/saml-idp.js';
import { createWorkspace } from '../workspaces/helpers.js';

export interface SsoWorkspace {
  id: string;
  owner: Session;
  domain: string;
}

/** A fresh domain name of the tests, never a public mail domain. */
export const uniqueDomain = (prefix = 'corp') => `${prefix}-${crypto.randomBytes(5).toString('hex')}.example`;

/** Marks `domain` VERIFIED for `workspaceId` (as POST .../verify would after the TXT look-up). */
export async function verifiedDomain(app: TestApp, workspaceId: string, domain: string) {
  await app.deps.db
    .insertInto('workspace_domains')
    .values({
      workspace_id: workspaceId,
      domain,
      status: 'VERIFIED',
      verification_token: crypto.randomBytes(12).toString('hex'),
      verified_at: new Date(),
    })
    .execute();
}

/** A workspace of a new owner with one VERIFIED domain. */
export async function ssoWorkspace(app: TestApp, prefix = 'sso'): Promise<SsoWorkspace> {
  const owner = await registerAndLogin(app.api, { prefix: `${prefix}-owner` });
  const id = await createWorkspace(app, owner.accessToken, `SSO ${crypto.randomBytes(3).toString('hex')}`);
  const domain = uniqueDomain(prefix);
  await verifiedDomain(app, id, domain);
  return { id, owner, domain };
}

/** POST .../sso/connections of a SAML connection to `idp` by its metadata; answers the connection. */
export async function samlConnection(
  app: TestApp,
  ws: SsoWorkspace,
  idp: TestSamlIdp,
  extra: Record<string, unknown> = {},
) {
  const res = await app.api('POST', `/workspaces/${ws.id}/sso/connections`, {
    token: ws.owner.accessToken,
    body: { type: 'SAML', name: 'Test IdP', metadataXml: idp.metadataXml, ...extra },
  });
  if (res.status !== 201) throw new Error(`create connection failed: ${res.status} ${res.text}`);
  return res.body as { id: string; sp: { entityId: string; acsUrl: string; metadataUrl: string } };
}
