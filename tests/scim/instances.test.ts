// Deprovisioning holds on every instance at once: two API processes (`npm start`, as the cluster test
// runs them) on one database of the file's own. The directory talks to instance A; the person works on
// instance B. Deactivated on A, their very next request on B is refused (403 MEMBERSHIP_SUSPENDED), with no
// wait; activated again, served again; deleted, the workspace is gone for them (404).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, expectError, registerAndLogin, type Api } from '../helpers/http.js';
import { ownDatabase, type OwnDatabase } from '../developer/helpers.js';
import { childEnv, killAll, startApi } from '../instances/processes.js';
import { hex, scimClient } from './helpers.js';

let db: OwnDatabase | undefined;
let pool: pg.Pool | undefined;
let a: Api;
let b: Api;

beforeAll(async () => {
  db = await ownDatabase('scim');
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const env = childEnv({ DATABASE_URL: db.url, RATE_LIMIT_ENABLED: 'false', LOG_LEVEL: 'info' });
  // Both migrate the new database at start; the migrator's lock lets one do it.
  const [first, second] = await Promise.all([startApi('scim-a', env), startApi('scim-b', env)]);
  a = apiClient(first.url);
  b = apiClient(second.url);
}, 120_000);

afterAll(async () => {
  await killAll();
  await pool?.end().catch(() => undefined);
  await db?.drop();
}, 60_000);

describe('two API instances', () => {
  it('refuse a deprovisioned member on the other instance from the next request', async () => {
    const owner = await registerAndLogin(a, { prefix: 'scim-cluster-owner' });
    const created = await a('POST', '/workspaces', { token: owner.accessToken, body: { name: `Cluster ${hex()}` } });
    expect(created.status).toBe(201);
    const workspaceId: string = created.body.id;
    const upgraded = await a('POST', '/billing/checkout', {
      token: owner.accessToken,
      body: { workspaceId, planCode: 'enterprise' },
    });
    expect(upgraded.status).toBe(200);
    const domain = `cluster-${hex()}.example`;
    await pool!.query(
      `insert into workspace_domains (workspace_id, domain, status, verification_token, verified_at)
       values ($1, $2, 'VERIFIED', $3, now())`,
      [workspaceId, domain, hex(8)],
    );
    const token = await a('POST', `/workspaces/${workspaceId}/scim/tokens`, {
      token: owner.accessToken,
      body: { name: 'Directory' },
    });
    expect(token.status).toBe(201);
    const scim = scimClient(a, token.body.rawToken);

    // The person has an account; the directory adds them; they work on instance B.
    const person = await registerAndLogin(b, { prefix: 'scim-cluster-person' });
    const email = `${person.email.split('@')[0]}@${domain}`;
    await pool!.query('update users set email = $1 where id = $2', [email, person.userId]);
    const user = await scim('POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: email,
      active: true,
    });
    expect(user.status, user.text).toBe(201);
    const onB = () => b('GET', `/workspaces/${workspaceId}`, { token: person.accessToken });
    expect((await onB()).status).toBe(200);

    const off = await scim('PATCH', `/Users/${user.body.id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
    });
    expect(off.status, off.text).toBe(200);
    expectError(await onB(), 403, 'MEMBERSHIP_SUSPENDED');

    const on = await scim('PATCH', `/Users/${user.body.id}`, {
      Operations: [{ op: 'replace', value: { active: true } }],
    });
    expect(on.status).toBe(200);
    expect((await onB()).status).toBe(200);

    expect((await scim('DELETE', `/Users/${user.body.id}`)).status).toBe(204);
    expectError(await onB(), 404, 'NOT_FOUND');
    // Their own account stays: they registered it themselves.
    expect((await b('GET', '/auth/me', { token: person.accessToken })).status).toBe(200);
  });
});
