// The account routes in /openapi.json: each one listed under the Account tag, signed in or public as it
// is, with the success status and the domain errors the design names. (The error ledger of every test file
// also checks that each error answer the tests met is documented: tests/helpers/error-ledger-check.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
let doc: any;
beforeAll(async () => {
  app = await startTestApp();
  const res = await app.api('GET', '/openapi.json');
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(() => app?.close());

const codes = (op: any, status: number): string[] =>
  op.responses[String(status)]?.content['application/json'].schema.allOf[1].properties.code.enum ?? [];

const ROUTES: Array<[method: string, path: string, success: number, errors: Record<number, string[]>]> = [
  ['patch', '/auth/me', 200, { 400: ['BAD_REQUEST'], 401: ['UNAUTHORIZED'] }],
  [
    'post',
    '/auth/change-email',
    200,
    { 401: ['INVALID_CREDENTIALS'], 403: ['DEMO_READ_ONLY', 'REAUTHENTICATION_REQUIRED'], 409: ['EMAIL_TAKEN'] },
  ],
  ['post', '/auth/confirm-email-change', 200, { 400: ['INVALID_TOKEN'], 409: ['EMAIL_TAKEN'] }],
  [
    'post',
    '/auth/me/delete',
    200,
    {
      400: ['INVALID_MFA_CODE'],
      401: ['INVALID_CREDENTIALS', 'UNAUTHORIZED'],
      403: ['DEMO_READ_ONLY', 'REAUTHENTICATION_REQUIRED'],
      409: ['OWNERSHIP_TRANSFER_REQUIRED'],
    },
  ],
  ['post', '/auth/me/exports', 201, { 401: ['UNAUTHORIZED'], 409: ['EXPORT_IN_PROGRESS'] }],
  ['get', '/auth/me/exports/{exportId}', 200, { 404: ['NOT_FOUND'] }],
  ['get', '/auth/me/exports/{exportId}/download', 200, { 404: ['NOT_FOUND'] }],
];

describe('/openapi.json, the account routes', () => {
  it.each(ROUTES)('lists %s %s with its success status and errors', (method, path, success, errors) => {
    const op = doc.paths[path]?.[method];
    expect(op, `${method} ${path}`).toBeDefined();
    expect(op.tags).toEqual(['Account']);
    expect(op.summary).toBeTruthy();
    expect(op.responses[String(success)]).toBeDefined();
    const signedIn = path !== '/auth/confirm-email-change';
    expect(op.security).toEqual(signedIn ? [{ bearerAuth: [] }] : []);
    for (const [status, expected] of Object.entries(errors))
      expect(codes(op, Number(status))).toEqual(expect.arrayContaining(expected));
  });

  it('describes the Account tag, and the archive with its documented keys', () => {
    expect(doc.tags.find((t: { name: string }) => t.name === 'Account')?.description).toBeTruthy();
    const archive = doc.components.schemas.DataExportArchive;
    expect(Object.keys(archive.properties).sort()).toEqual(
      ['auditEntries', 'exportedAt', 'generations', 'identities', 'memberships', 'sessions', 'user'].sort(),
    );
    expect(doc.components.schemas.DataExport.properties.status.enum).toEqual(['PENDING', 'READY', 'FAILED']);
  });
});
