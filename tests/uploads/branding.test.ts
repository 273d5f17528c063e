// Workspace branding on STORAGE_PROVIDER=LOCAL (a temporary STORAGE_LOCAL_DIR listed before and after):
// PATCH /workspaces/{workspaceId}/branding sets the display name and the colours (#RRGGBB, as the schema in
// routers/files/router.ts documents: 'A colour as #RRGGBB.'), needs branding.manage (OWNER, ADMIN), and a
// refused update changes nothing. POST .../branding/logo takes a PNG, JPEG or WebP of at most 1 MiB (no
// SVG), stores a WebP of at most 1024 px under a generated name, and serves it to members only.
import fs from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, registerAndLogin, type ApiResponse, type Session } from '../helpers/http.js';
import { inviteAndJoin, upgradeWorkspace, type Role } from '../workspaces/helpers.js';
import {
  MiB,
  PDF,
  SVG_WITH_SCRIPT,
  TEXT_AS_PNG,
  addedSince,
  answerBeforeBody,
  download,
  form,
  padTo,
  pngClaiming,
  pngOf,
  solidImage,
  startLocalApp,
  type LocalApp,
} from './helpers.js';

let local: LocalApp;
let sessions: Record<Role, Session>;
let outsider: Session;
let workspaceId: string;

beforeAll(async () => {
  local = await startLocalApp('branding');
  const owner = await registerAndLogin(local.app.api, { prefix: 'br-owner' });
  workspaceId = owner.workspaceId;
  // OWNER, ADMIN, MEMBER and VIEWER: more members than the Lite plan's 3.
  await upgradeWorkspace(local.app, owner.accessToken, workspaceId);
  sessions = {
    OWNER: owner,
    ADMIN: await inviteAndJoin(local.app, owner.accessToken, workspaceId, 'ADMIN', 'br-admin'),
    MEMBER: await inviteAndJoin(local.app, owner.accessToken, workspaceId, 'MEMBER', 'br-member'),
    VIEWER: await inviteAndJoin(local.app, owner.accessToken, workspaceId, 'VIEWER', 'br-viewer'),
  };
  outsider = await registerAndLogin(local.app.api, { prefix: 'br-outsider' });
});

afterAll(async () => {
  await local?.close();
});

const api = (...args: Parameters<LocalApp['app']['api']>) => local.app.api(...args);
const brandingPath = () => `/workspaces/${workspaceId}/branding`;

/** `token: null` sends no Authorization header. */
const patch = (body: Record<string, unknown>, token: string | null = sessions.OWNER.accessToken) =>
  api('PATCH', brandingPath(), { ...(token !== null && { token }), body });

async function readBranding(token = sessions.VIEWER.accessToken) {
  const res = await api('GET', brandingPath(), { token });
  if (res.status !== 200) throw new Error(`GET branding failed: ${res.status} ${res.text}`);
  return res.body as {
    workspaceId: string;
    displayName: string | null;
    primaryColor: string | null;
    accentColor: string | null;
    logoUrl: string | null;
  };
}

/** Puts a known branding in place, so each refusal can show that nothing moved. */
async function setKnownBranding() {
  const res = await patch({ displayName: 'Known Name', primaryColor: '#102030', accentColor: '#A0B0C0' });
  expect(res.status, res.text).toBe(200);
  return readBranding();
}

describe('PATCH /workspaces/{workspaceId}/branding', () => {
  it('the OWNER sets display name and colours; every member reads them back', async () => {
    const res = await patch({ displayName: 'Acme Studio', primaryColor: '#1A2B3C', accentColor: '#ffcc00' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      workspaceId,
      displayName: 'Acme Studio',
      primaryColor: '#1A2B3C',
      accentColor: '#ffcc00',
    });
    for (const role of ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'] as const) {
      expect(await readBranding(sessions[role].accessToken)).toMatchObject({
        displayName: 'Acme Studio',
        primaryColor: '#1A2B3C',
        accentColor: '#ffcc00',
      });
    }
  });

  it('an ADMIN may change it too; fields not sent are kept, null clears one', async () => {
    await setKnownBranding();
    const res = await patch({ accentColor: '#00ff7f' }, sessions.ADMIN.accessToken);
    expect(res.status, res.text).toBe(200);
    expect(await readBranding()).toMatchObject({
      displayName: 'Known Name',
      primaryColor: '#102030',
      accentColor: '#00ff7f',
    });

    expect((await patch({ primaryColor: null })).status).toBe(200);
    expect(await readBranding()).toMatchObject({
      displayName: 'Known Name',
      primaryColor: null,
      accentColor: '#00ff7f',
    });
  });

  it('trims the display name', async () => {
    const res = await patch({ displayName: '   Spaced Out   ' });
    expect(res.status, res.text).toBe(200);
    expect((await readBranding()).displayName).toBe('Spaced Out');
  });

  it.each(['red', '#12345', '#GGGGGG', '#fff', '123456', '#1234567', '#12345g', ' #123456', 'rgb(1,2,3)', ''])(
    'refuses the colour %j with 400 naming the field, and changes nothing (not even the valid fields sent with it)',
    async (colour) => {
      const known = await setKnownBranding();
      for (const field of ['primaryColor', 'accentColor'] as const) {
        const res = await patch({ displayName: 'Should Not Stick', [field]: colour });
        const error = expectError(res, 400, 'BAD_REQUEST');
        expect(error.issues?.map((i) => i.path)).toContain(field);
        expect(error.message).toMatch(/#RRGGBB/);
        expect(await readBranding()).toEqual(known);
      }
    },
  );

  it.each([
    ['an empty body', {}],
    ['an empty display name', { displayName: '   ' }],
    ['a display name over 100 characters', { displayName: 'x'.repeat(101) }],
    ['a colour that is not a string', { primaryColor: 0x123456 }],
  ])('refuses %s with 400 and changes nothing', async (_label, body) => {
    const known = await setKnownBranding();
    expectError(await patch(body), 400, 'BAD_REQUEST');
    expect(await readBranding()).toEqual(known);
  });

  it('a MEMBER or VIEWER gets 403 PERMISSION_DENIED and nothing changes', async () => {
    const known = await setKnownBranding();
    for (const role of ['MEMBER', 'VIEWER'] as const) {
      const error = expectError(
        await patch({ displayName: `Hijacked by ${role}`, primaryColor: '#000000' }, sessions[role].accessToken),
        403,
        'PERMISSION_DENIED',
      );
      expect(error.message).toContain(role);
    }
    expect(await readBranding()).toEqual(known);
  });

  it('an anonymous caller gets 401, an outsider 404, and nothing changes', async () => {
    const known = await setKnownBranding();
    expectError(await patch({ displayName: 'Anonymous' }, null), 401, 'UNAUTHORIZED');
    expectError(await patch({ displayName: 'Outsider' }, outsider.accessToken), 404, 'NOT_FOUND');
    expectError(await api('GET', brandingPath(), { token: outsider.accessToken }), 404, 'NOT_FOUND');
    expect(await readBranding()).toEqual(known);
  });
});

describe('POST /workspaces/{workspaceId}/branding/logo', () => {
  const logoPath = () => `/workspaces/${workspaceId}/branding/logo`;
  /** `token: null` sends no Authorization header. */
  const sendLogo = (
    data: Buffer,
    name = 'logo.png',
    type = 'image/png',
    token: string | null = sessions.OWNER.accessToken,
    field = 'logo',
  ) => api('POST', logoPath(), { ...(token !== null && { token }), form: form(field, data, name, type) });

  const logoRows = () =>
    local.app.deps.db.selectFrom('files').selectAll().where('workspace_id', '=', workspaceId).execute();

  /** Sends a logo that must be refused; checks nothing was stored and the current logo stays. */
  async function refusedWithoutTrace(send: () => Promise<ApiResponse>, status: number, code: string) {
    const diskBefore = await local.listing();
    const rowsBefore = await logoRows();
    const brandingBefore = await readBranding();
    const error = expectError(await send(), status, code);
    expect(await local.listing()).toEqual(diskBefore);
    expect(await logoRows()).toEqual(rowsBefore);
    expect(await readBranding()).toEqual(brandingBefore);
    return error;
  }

  it('takes a PNG, stores it as a WebP of at most 1024 px under a generated name, and shows it in the branding', async () => {
    const before = await local.listing();
    const res = await sendLogo(await pngOf(2000, 500, '#336699'), 'our company logo.png');
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ contentType: 'image/webp' });
    expect(res.body.logoUrl).toMatch(/^\/storage\/files\/[0-9a-f-]{36}$/);

    const added = await addedSince(local, before);
    expect(added).toHaveLength(1);
    expect(added[0]).toMatch(/^uploads\/logos\/[0-9a-f-]{36}\.webp$/);
    const stored = await fs.readFile(path.join(local.root, added[0]));
    expect(res.body.size).toBe(stored.length);
    expect(await sharp(stored).metadata()).toMatchObject({ format: 'webp', width: 1024, height: 256 });

    expect((await readBranding()).logoUrl).toBe(res.body.logoUrl);

    // Members (even a VIEWER) get it, with nosniff; an outsider and an anonymous caller do not.
    const served = await download(local.app, res.body.logoUrl, sessions.VIEWER.accessToken);
    expect(served.status).toBe(200);
    expect(served.bytes.equals(stored)).toBe(true);
    expect(served.headers.get('content-type')).toBe('image/webp');
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expectError(await api('GET', res.body.logoUrl, { token: outsider.accessToken }), 404, 'NOT_FOUND');
    expectError(await api('GET', res.body.logoUrl), 401, 'UNAUTHORIZED');
  });

  it('replacing the logo removes the previous one: its file row and its object on disk', async () => {
    const first = await sendLogo(await pngOf(300, 100, '#112233'));
    expect(first.status, first.text).toBe(200);
    const firstId = first.body.logoUrl.split('/').pop();
    const firstKey = (await logoRows()).find((r) => r.id === firstId)!.storage_key;
    const second = await sendLogo(await pngOf(300, 100, '#445566'));
    expect(second.status, second.text).toBe(200);

    expect((await logoRows()).map((r) => r.id)).not.toContain(firstId);
    expect(await local.listing()).not.toContain(`uploads/${firstKey}`);
    expectError(await api('GET', first.body.logoUrl, { token: sessions.OWNER.accessToken }), 404, 'NOT_FOUND');
    expect((await readBranding()).logoUrl).toBe(second.body.logoUrl);
  });

  it('does not enlarge a small logo; JPEG and WebP are accepted too', async () => {
    for (const [data, type] of [
      [await pngOf(120, 60), 'image/png'],
      [await solidImage(120, 60).jpeg().toBuffer(), 'image/jpeg'],
      [await solidImage(120, 60).webp().toBuffer(), 'image/webp'],
    ] as const) {
      const res = await sendLogo(data, 'small', type);
      expect(res.status, res.text).toBe(200);
      const served = await download(local.app, res.body.logoUrl, sessions.OWNER.accessToken);
      expect(await sharp(served.bytes).metadata()).toMatchObject({ format: 'webp', width: 120, height: 60 });
    }
  });

  it('an ADMIN may set it; a file of exactly 1 MiB is accepted (the limit is 1 MiB)', async () => {
    const res = await sendLogo(
      padTo(await pngOf(64, 64), 1 * MiB),
      'logo.png',
      'image/png',
      sessions.ADMIN.accessToken,
    );
    expect(res.status, res.text).toBe(200);
    expect((await readBranding()).logoUrl).toBe(res.body.logoUrl);
  });

  it.each([
    ['an SVG', () => SVG_WITH_SCRIPT, 'logo.svg', 'image/svg+xml', 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['an SVG named .png', () => SVG_WITH_SCRIPT, 'logo.png', 'image/png', 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['a GIF', () => solidImage(16, 16).gif().toBuffer(), 'logo.gif', 'image/gif', 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['a PDF', () => PDF, 'logo.pdf', 'application/pdf', 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['a text file named .png', () => TEXT_AS_PNG, 'logo.png', 'image/png', 415, 'UNSUPPORTED_MEDIA_TYPE'],
    [
      'a PNG header claiming 50,000 x 50,000 pixels',
      () => pngClaiming(50_000, 50_000),
      'logo.png',
      'image/png',
      400,
      'BAD_REQUEST',
    ],
    ['a 0-byte file', () => Buffer.alloc(0), 'logo.png', 'image/png', 400, 'BAD_REQUEST'],
    [
      'a file one byte over 1 MiB',
      async () => padTo(await pngOf(64, 64), 1 * MiB + 1),
      'logo.png',
      'image/png',
      413,
      'PAYLOAD_TOO_LARGE',
    ],
  ] as const)(
    'refuses %s, stores nothing and keeps the current logo',
    async (_label, make, name, type, status, code) => {
      const data = await make();
      const error = await refusedWithoutTrace(() => sendLogo(data, name, type), status, code);
      if (status === 413) expect(error.message).toMatch(/1 MiB/);
    },
  );

  it('refuses the wrong field name, an anonymous caller, a MEMBER, a VIEWER and an outsider, storing nothing', async () => {
    const png = await pngOf(64, 64);
    expect(
      (
        await refusedWithoutTrace(
          () => sendLogo(png, 'logo.png', 'image/png', sessions.OWNER.accessToken, 'file'),
          400,
          'BAD_REQUEST',
        )
      ).message,
    ).toContain('"logo"');
    await refusedWithoutTrace(() => sendLogo(png, 'logo.png', 'image/png', null), 401, 'UNAUTHORIZED');
    await refusedWithoutTrace(
      () => sendLogo(png, 'logo.png', 'image/png', sessions.MEMBER.accessToken),
      403,
      'PERMISSION_DENIED',
    );
    await refusedWithoutTrace(
      () => sendLogo(png, 'logo.png', 'image/png', sessions.VIEWER.accessToken),
      403,
      'PERMISSION_DENIED',
    );
    await refusedWithoutTrace(() => sendLogo(png, 'logo.png', 'image/png', outsider.accessToken), 404, 'NOT_FOUND');
  });

  it('answers an anonymous caller (401), a MEMBER (403) and an outsider (404) before the body has arrived', async () => {
    const member = expectError(
      await sendLogo(await pngOf(64, 64), 'logo.png', 'image/png', sessions.MEMBER.accessToken),
      403,
      'PERMISSION_DENIED',
    );
    for (const [token, status, body] of [
      [undefined, 401, { code: 'UNAUTHORIZED' }],
      [sessions.MEMBER.accessToken, 403, { code: 'PERMISSION_DENIED', message: member.message }],
      [outsider.accessToken, 404, { code: 'NOT_FOUND' }],
    ] as const) {
      const early = await answerBeforeBody(local.app, logoPath(), 'logo', token);
      expect(early, 'no answer while the body was still open').toBeDefined();
      expect(early).toMatchObject({ status, body });
    }
  });
});
