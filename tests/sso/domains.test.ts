// Verified domains of a workspace, against a DNS server on loopback (tests/helpers/dns-server.ts) that
// the app reaches through DNS_SERVERS: the claim, the TXT look-up, one workspace per verified domain,
// public mail domains refused, removal, and the periodic re-check that takes a verification back when its
// record has been gone for 7 days. Who may call them (owners only) is in the permission matrix.
import crypto from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { recheckDomains, RECORD_GRACE_DAYS } from '../../routers/sso/domains.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeDns, type FakeDns } from '../helpers/dns-server.js';
import { expectError, registerAndLogin, type Session } from '../helpers/http.js';
import { mailsTo } from '../helpers/mail.js';
import { createWorkspace } from '../workspaces/helpers.js';

let app: TestApp;
let dns: FakeDns;

beforeAll(async () => {
  dns = await startFakeDns();
  app = await startTestApp({ DNS_SERVERS: dns.address });
});
afterAll(async () => {
  await app?.close();
  await dns?.close();
});
beforeEach(() => {
  dns.failing = false;
});

const uniqueDomain = () => `corp-${crypto.randomBytes(5).toString('hex')}.example`;

async function ownerWithWorkspace(prefix: string): Promise<{ owner: Session; workspaceId: string }> {
  const owner = await registerAndLogin(app.api, { prefix });
  const workspaceId = await createWorkspace(app, owner.accessToken, `Domains ${crypto.randomBytes(3).toString('hex')}`);
  return { owner, workspaceId };
}

const claim = (s: Session, workspaceId: string, domain: string) =>
  app.api('POST', `/workspaces/${workspaceId}/domains`, { token: s.accessToken, body: { domain } });
const verify = (s: Session, workspaceId: string, domainId: string) =>
  app.api('POST', `/workspaces/${workspaceId}/domains/${domainId}/verify`, { token: s.accessToken, body: {} });
const list = (s: Session, workspaceId: string) =>
  app.api('GET', `/workspaces/${workspaceId}/domains`, { token: s.accessToken });
const domainRow = (id: string) =>
  app.deps.db.selectFrom('workspace_domains').selectAll().where('id', '=', id).executeTakeFirst();
const setupMails = async (to: string) =>
  (await mailsTo(app, to)).filter((m) => m.template === 'sign-in-setup-changed').map((m) => m.subject + m.text);
const auditActions = async (workspaceId: string) =>
  (
    await app.deps.db
      .selectFrom('audit_logs')
      .select('action')
      .where('workspace_id', '=', workspaceId)
      .where('action', 'like', 'sso.domain%')
      .orderBy('created_at')
      .execute()
  ).map((a) => a.action);

/** Claims `domain` and publishes its record on the fake DNS; answers the claimed domain. */
async function claimAndPublish(s: Session, workspaceId: string, domain: string) {
  const res = await claim(s, workspaceId, domain);
  expect(res.status, res.text).toBe(201);
  dns.setTxt(res.body.verification.name, ['v=spf1 -all', res.body.verification.value]);
  return res.body as { id: string; verification: { name: string; value: string } };
}

describe('claiming a domain', () => {
  it('answers 201 PENDING with the TXT record to publish, lists it, audits it and mails the owners', async () => {
    const { owner, workspaceId } = await ownerWithWorkspace('dom-claim');
    const domain = uniqueDomain();
    const res = await claim(owner, workspaceId, ` ${domain.toUpperCase()}. `);
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      domain,
      status: 'PENDING',
      verification: {
        type: 'TXT',
        name: `_saas-verification.${domain}`,
        value: expect.stringMatching(/^saas-verification=/),
      },
      createdAt: expect.any(String),
      verifiedAt: null,
    });
    expect((await list(owner, workspaceId)).body).toEqual({ items: [res.body] });
    expect(await auditActions(workspaceId)).toEqual(['sso.domain_added']);
    expect((await setupMails(owner.email)).join('\n')).toContain(domain);
  });

  it.each(['gmail.com', 'Outlook.com', 'proton.me', 'yahoo.com'])(
    'refuses the public mail domain %s: 400, nothing stored',
    async (domain) => {
      const { owner, workspaceId } = await ownerWithWorkspace('dom-public');
      const err = expectError(await claim(owner, workspaceId, domain), 400, 'BAD_REQUEST');
      expect(err.issues?.map((i) => i.path)).toEqual(['domain']);
      expect((await list(owner, workspaceId)).body.items).toEqual([]);
    },
  );

  it.each(['localhost', 'not a domain', '-bad.example', 'x'.repeat(64) + '.example', 'a..b.example', ''])(
    'refuses %j as a domain name: 400, nothing stored',
    async (domain) => {
      const { owner, workspaceId } = await ownerWithWorkspace('dom-invalid');
      expectError(await claim(owner, workspaceId, domain), 400, 'BAD_REQUEST');
      expect((await list(owner, workspaceId)).body.items).toEqual([]);
    },
  );

  it('refuses the same domain twice in one workspace: 409 CONFLICT', async () => {
    const { owner, workspaceId } = await ownerWithWorkspace('dom-twice');
    const domain = uniqueDomain();
    expect((await claim(owner, workspaceId, domain)).status).toBe(201);
    expectError(await claim(owner, workspaceId, domain), 409, 'CONFLICT');
    expect((await list(owner, workspaceId)).body.items).toHaveLength(1);
  });
});

describe('verifying a domain', () => {
  it('is VERIFIED once the TXT record holds the value (among other records), audited and mailed', async () => {
    const { owner, workspaceId } = await ownerWithWorkspace('dom-verify');
    const domain = uniqueDomain();
    const claimed = await claimAndPublish(owner, workspaceId, domain);
    const res = await verify(owner, workspaceId, claimed.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: claimed.id, status: 'VERIFIED', verifiedAt: expect.any(String) });
    expect(dns.queries).toContain(claimed.verification.name);
    expect(await auditActions(workspaceId)).toEqual(['sso.domain_added', 'sso.domain_verified']);
    expect((await setupMails(owner.email)).some((m) => m.includes(`${domain} is verified`))).toBe(true);
    // Verifying again changes nothing and needs no look-up.
    const asked = dns.queries.length;
    expect((await verify(owner, workspaceId, claimed.id)).body.status).toBe('VERIFIED');
    expect(dns.queries).toHaveLength(asked);
  });

  it('stays PENDING without the record, or with another value: 409 DOMAIN_NOT_VERIFIED', async () => {
    const { owner, workspaceId } = await ownerWithWorkspace('dom-missing');
    const domain = uniqueDomain();
    const claimed = (await claim(owner, workspaceId, domain)).body;
    expectError(await verify(owner, workspaceId, claimed.id), 409, 'DOMAIN_NOT_VERIFIED');
    dns.setTxt(claimed.verification.name, ['saas-verification=someone-elses-token']);
    expectError(await verify(owner, workspaceId, claimed.id), 409, 'DOMAIN_NOT_VERIFIED');
    // The value under another name does not count either.
    dns.setTxt(domain, [claimed.verification.value]);
    dns.setTxt(claimed.verification.name, []);
    expectError(await verify(owner, workspaceId, claimed.id), 409, 'DOMAIN_NOT_VERIFIED');
    expect(await domainRow(claimed.id)).toMatchObject({ status: 'PENDING', verified_at: null });
    expect(await auditActions(workspaceId)).toEqual(['sso.domain_added']);
  });

  it('answers 503 SERVICE_UNAVAILABLE when the DNS server fails, and changes nothing', async () => {
    const { owner, workspaceId } = await ownerWithWorkspace('dom-servfail');
    const claimed = await claimAndPublish(owner, workspaceId, uniqueDomain());
    dns.failing = true;
    expectError(await verify(owner, workspaceId, claimed.id), 503, 'SERVICE_UNAVAILABLE');
    expect(await domainRow(claimed.id)).toMatchObject({ status: 'PENDING' });
  });

  it("is one workspace's at most: another with its own record gets 409 DOMAIN_TAKEN until the first removes it", async () => {
    const first = await ownerWithWorkspace('dom-first');
    const second = await ownerWithWorkspace('dom-second');
    const domain = uniqueDomain();
    const a = await claimAndPublish(first.owner, first.workspaceId, domain);
    expect((await verify(first.owner, first.workspaceId, a.id)).status).toBe(200);
    // A claim is allowed (it proves nothing yet); the verification is not.
    const b = (await claim(second.owner, second.workspaceId, domain)).body;
    dns.setTxt(b.verification.name, [a.verification.value, b.verification.value]);
    expectError(await verify(second.owner, second.workspaceId, b.id), 409, 'DOMAIN_TAKEN');
    expect(await domainRow(b.id)).toMatchObject({ status: 'PENDING' });

    const removed = await app.api('DELETE', `/workspaces/${first.workspaceId}/domains/${a.id}`, {
      token: first.owner.accessToken,
    });
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body).toEqual({ message: expect.stringContaining(domain) });
    expect((await list(first.owner, first.workspaceId)).body.items).toEqual([]);
    expect(await auditActions(first.workspaceId)).toEqual([
      'sso.domain_added',
      'sso.domain_verified',
      'sso.domain_removed',
    ]);
    expect((await verify(second.owner, second.workspaceId, b.id)).body.status).toBe('VERIFIED');
  });

  it("answers 404 for another workspace's domain id, and for an unknown one", async () => {
    const first = await ownerWithWorkspace('dom-own');
    const second = await ownerWithWorkspace('dom-other');
    const a = (await claim(first.owner, first.workspaceId, uniqueDomain())).body;
    expectError(await verify(second.owner, second.workspaceId, a.id), 404, 'NOT_FOUND');
    expectError(
      await app.api('DELETE', `/workspaces/${second.workspaceId}/domains/${a.id}`, { token: second.owner.accessToken }),
      404,
      'NOT_FOUND',
    );
    expectError(await verify(first.owner, first.workspaceId, crypto.randomUUID()), 404, 'NOT_FOUND');
    expectError(await verify(first.owner, first.workspaceId, 'not-a-uuid'), 400, 'BAD_REQUEST');
    expect(await domainRow(a.id)).toMatchObject({ status: 'PENDING' });
  });
});

describe('the periodic re-check', () => {
  const DAY = 86_400_000;
  // Every verified domain of the run is due; a large limit makes sure this file's are among them.
  const recheck = () => recheckDomains(app.deps, { limit: 100_000 });

  async function verifiedDomain(prefix: string) {
    const { owner, workspaceId } = await ownerWithWorkspace(prefix);
    const domain = uniqueDomain();
    const claimed = await claimAndPublish(owner, workspaceId, domain);
    expect((await verify(owner, workspaceId, claimed.id)).status).toBe(200);
    return { owner, workspaceId, domain, claimed };
  }
  /** Moves the domain's last check (and the first time its record was missed) into the past. */
  const age = (id: string, missingDaysAgo: number | null) =>
    app.deps.db
      .updateTable('workspace_domains')
      .set({
        checked_at: new Date(Date.now() - 2 * 3_600_000),
        missing_since: missingDaysAgo === null ? null : new Date(Date.now() - missingDaysAgo * DAY),
      })
      .where('id', '=', id)
      .execute();

  it('keeps a domain whose record is still there, and marks when a record first goes missing', async () => {
    const d = await verifiedDomain('dom-recheck-kept');
    await age(d.claimed.id, null);
    await recheck();
    expect(await domainRow(d.claimed.id)).toMatchObject({ status: 'VERIFIED', missing_since: null });

    dns.setTxt(d.claimed.verification.name, []);
    await age(d.claimed.id, null);
    await recheck();
    const missing = await domainRow(d.claimed.id);
    expect(missing).toMatchObject({ status: 'VERIFIED', missing_since: expect.any(Date) });

    // Back before the grace period ends: the mark is cleared.
    dns.setTxt(d.claimed.verification.name, [d.claimed.verification.value]);
    await age(d.claimed.id, 3);
    await recheck();
    expect(await domainRow(d.claimed.id)).toMatchObject({ status: 'VERIFIED', missing_since: null });
  });

  it(`puts a domain back to PENDING when its record has been gone for ${RECORD_GRACE_DAYS} days, audited and mailed`, async () => {
    const d = await verifiedDomain('dom-recheck-gone');
    dns.setTxt(d.claimed.verification.name, []);
    await age(d.claimed.id, RECORD_GRACE_DAYS + 0.5);
    await recheck();
    expect(await domainRow(d.claimed.id)).toMatchObject({ status: 'PENDING', verified_at: null, missing_since: null });
    expect(await auditActions(d.workspaceId)).toEqual([
      'sso.domain_added',
      'sso.domain_verified',
      'sso.domain_unverified',
    ]);
    expect((await setupMails(d.owner.email)).some((m) => m.includes(`${RECORD_GRACE_DAYS} days`))).toBe(true);
    expect((await list(d.owner, d.workspaceId)).body.items[0]).toMatchObject({ status: 'PENDING', verifiedAt: null });
  });

  it('changes nothing when the DNS server fails (no answer is not a missing record)', async () => {
    const d = await verifiedDomain('dom-recheck-servfail');
    await age(d.claimed.id, RECORD_GRACE_DAYS + 1);
    dns.failing = true;
    await recheck();
    expect(await domainRow(d.claimed.id)).toMatchObject({ status: 'VERIFIED', missing_since: expect.any(Date) });
    expect(await auditActions(d.workspaceId)).not.toContain('sso.domain_unverified');
  });
});
