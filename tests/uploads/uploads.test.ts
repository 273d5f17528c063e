// STORAGE_PROVIDER=LOCAL, in a temporary STORAGE_LOCAL_DIR this file lists before and after each upload.
// POST /storage/upload keeps accepted files under generated names and serves them back (nosniff, their
// content type) to members of their workspace only; refused files (wrong type by content, unreadable,
// empty, too large, sent wrongly) answer in the error shape and leave nothing on disk and no row.
// POST /profile/avatar stores a 512 x 512 WebP re-encoding in which nothing of the original payload
// survives. GET /storage/provider-status tells the provider and its limits, not where files live.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, registerAndLogin, type ApiResponse, type Session } from '../helpers/http.js';
import { inviteAndJoin } from '../workspaces/helpers.js';
import {
  HTML,
  MiB,
  PDF,
  SVG_WITH_SCRIPT,
  TEXT_AS_PNG,
  addedSince,
  answerBeforeBody,
  download,
  form,
  gifClaiming,
  padTo,
  pixels,
  pngClaiming,
  pngOf,
  solidImage,
  startLocalApp,
  withTextChunk,
  type LocalApp,
} from './helpers.js';
let local: LocalApp;
let owner: Session;
let member: Session;
let viewer: Session;
let outsider: Session;
let PNG: Buffer;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A marker that would be found verbatim if any of the original payload were kept. */
const MARKER = `PAYLOAD-${crypto.randomBytes(6).toString('hex')}-<script>alert(1)</script>`;

beforeAll(async () => {
  PNG = await pngOf(40, 30);
  local = await startLocalApp('files');
  owner = await registerAndLogin(local.app.api, { prefix: 'up-owner' });
  member = await inviteAndJoin(local.app, owner.accessToken, owner.workspaceId, 'MEMBER', 'up-member');
  viewer = await inviteAndJoin(local.app, owner.accessToken, owner.workspaceId, 'VIEWER', 'up-viewer');
  outsider = await registerAndLogin(local.app.api, { prefix: 'up-outsider' });
});

afterAll(async () => {
  await local?.close();
});

const api = (...args: Parameters<LocalApp['app']['api']>) => local.app.api(...args);

const fileRows = (workspaceId: string) =>
  local.app.deps.db
    .selectFrom('files')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .execute();

const upload = (
  data: Buffer,
  name: string,
  type = 'application/octet-stream',
  token = owner.accessToken,
  extra: Record<string, string> = {},
) => api('POST', '/storage/upload', { token, form: form('file', data, name, type, extra) });

/** Uploads `data`, expects 201 and exactly one new file on disk; answers the body, its path and its bytes. */
async function uploadOk(data: Buffer, name: string, type?: string) {
  const before = await local.listing();
  const res = await upload(data, name, type);
  expect(res.status, res.text).toBe(201);
  const added = await addedSince(local, before);
  expect(added).toHaveLength(1);
  const stored = await fs.readFile(path.join(local.root, added[0]));
  return { body: res.body, file: added[0], stored };
}

/** Sends a request that must be refused, and checks it left nothing on disk and no files row. */
async function refusedWithoutTrace(
  send: () => Promise<ApiResponse>,
  status: number,
  code: string,
  workspaceId = owner.workspaceId,
) {
  const diskBefore = await local.listing();
  const rowsBefore = await fileRows(workspaceId);
  const res = await send();
  const error = expectError(res, status, code);
  expect(await local.listing()).toEqual(diskBefore);
  expect(await fileRows(workspaceId)).toEqual(rowsBefore);
  return error;
}

describe('POST /storage/upload: accepted files', () => {
  it('stores a real PNG under a generated name and answers its id, size, type and URL', async () => {
    const { body, file, stored } = await uploadOk(PNG, 'holiday-photo.png', 'image/png');
    expect(body).toMatchObject({ workspaceId: owner.workspaceId, contentType: 'image/png', name: 'holiday-photo.png' });
    expect(body.id).toMatch(UUID);
    expect(body.url).toBe(`/storage/files/${body.id}`);
    expect(body.size).toBe(stored.length);

    expect(file).toMatch(/^uploads\/files\/[0-9a-f-]{36}\.png$/);
    expect(file).not.toContain('holiday');
    const [row] = (await fileRows(owner.workspaceId)).filter((r) => r.id === body.id);
    expect(row).toMatchObject({
      storage_key: file.replace(/^uploads\//, ''),
      content_type: 'image/png',
      size_bytes: stored.length,
      uploaded_by: owner.userId,
    });

    // The stored file is the same picture.
    expect(await pixels(stored)).toEqual(await pixels(PNG));
  });

  it('serves the stored bytes back to members with nosniff and the right content type', async () => {
    const { body, stored } = await uploadOk(PNG, 'served.png', 'image/png');
    for (const reader of [owner, member, viewer]) {
      const res = await download(local.app, body.url, reader.accessToken);
      expect(res.status).toBe(200);
      expect(res.bytes.equals(stored)).toBe(true);
      expect(res.headers.get('content-type')).toBe('image/png');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('content-security-policy')).toMatch(/sandbox/);
      expect(res.headers.get('content-disposition')).toMatch(/^inline/);
    }
  });

  it('refuses the file to an outsider (404, like a file that does not exist) and to an anonymous caller (401)', async () => {
    const { body, stored } = await uploadOk(PNG, 'private.png', 'image/png');
    const theirs = await api('GET', body.url, { token: outsider.accessToken });
    const missing = await api('GET', `/storage/files/${crypto.randomUUID()}`, { token: outsider.accessToken });
    expect(expectError(theirs, 404, 'NOT_FOUND').message).toBe(expectError(missing, 404, 'NOT_FOUND').message);
    expect(theirs.text).not.toContain(stored.toString('latin1', 0, 16));
    expect(theirs.headers.get('content-type')).toMatch(/application\/json/);

    const anonymous = await api('GET', body.url);
    expectError(anonymous, 401, 'UNAUTHORIZED');
    expect(anonymous.headers.get('content-type')).toMatch(/application\/json/);
  });

  it('an anonymous caller gets the same 401 for an existing file, a missing one and a malformed id', async () => {
    const { body } = await uploadOk(PNG, 'exists.png', 'image/png');
    const answers = [];
    for (const url of [body.url, `/storage/files/${crypto.randomUUID()}`, `/storage/files/${'-'.repeat(36)}`]) {
      answers.push(expectError(await api('GET', url), 401, 'UNAUTHORIZED').message);
    }
    expect(new Set(answers).size).toBe(1);
  });

  it('a 36-character id that is not a UUID (36 dashes, 36 letters) is the 404 of a missing file, not a 500', async () => {
    const missing = expectError(
      await api('GET', `/storage/files/${crypto.randomUUID()}`, { token: owner.accessToken }),
      404,
      'NOT_FOUND',
    );
    for (const id of ['-'.repeat(36), 'a'.repeat(36), 'A'.repeat(36)]) {
      expect(
        expectError(await api('GET', `/storage/files/${id}`, { token: owner.accessToken }), 404, 'NOT_FOUND').message,
      ).toBe(missing.message);
    }
  });

  it('in a suspended workspace, its members get 403 WORKSPACE_UNAVAILABLE and outsiders still the 404 of a missing file', async () => {
    const suspended = await registerAndLogin(local.app.api, { prefix: 'up-suspended' });
    const res = await upload(PNG, 'kept.png', 'image/png', suspended.accessToken);
    expect(res.status, res.text).toBe(201);
    await local.app.deps.db
      .updateTable('workspaces')
      .set({ status: 'SUSPENDED' })
      .where('id', '=', suspended.workspaceId)
      .execute();

    expect(
      expectError(await api('GET', res.body.url, { token: suspended.accessToken }), 403, 'WORKSPACE_UNAVAILABLE')
        .message,
    ).toMatch(/suspended/);
    const theirs = expectError(await api('GET', res.body.url, { token: outsider.accessToken }), 404, 'NOT_FOUND');
    const missing = expectError(
      await api('GET', `/storage/files/${crypto.randomUUID()}`, { token: outsider.accessToken }),
      404,
      'NOT_FOUND',
    );
    expect(theirs.message).toBe(missing.message);
    expectError(await api('GET', res.body.url), 401, 'UNAUTHORIZED');
  });

  it('keeps a PDF byte for byte and serves it as an attachment', async () => {
    const { body, stored } = await uploadOk(PDF, 'report.pdf', 'application/pdf');
    expect(body.contentType).toBe('application/pdf');
    expect(stored.equals(PDF)).toBe(true);
    const res = await download(local.app, body.url, viewer.accessToken);
    expect(res.status).toBe(200);
    expect(res.bytes.equals(PDF)).toBe(true);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment/);
  });

  it.each([
    ['JPEG', 'image/jpeg', 'jpg', () => solidImage(24, 24, '#10a050').jpeg().toBuffer()],
    ['WebP', 'image/webp', 'webp', () => solidImage(24, 24, '#10a050').webp().toBuffer()],
  ])('accepts a %s, typed by its content whatever its name says', async (_label, mime, ext, make) => {
    const { body, file } = await uploadOk(await make(), 'picture.png', 'image/png');
    expect(body.contentType).toBe(mime);
    expect(file).toMatch(new RegExp(`^uploads/files/[0-9a-f-]{36}\\.${ext}$`));
    const res = await download(local.app, body.url, owner.accessToken);
    expect(res.headers.get('content-type')).toBe(mime);
  });

  it('a member (files.write) may upload to the workspace too', async () => {
    const before = await local.listing();
    const res = await upload(PNG, 'by-member.png', 'image/png', member.accessToken, { workspaceId: owner.workspaceId });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ workspaceId: owner.workspaceId });
    expect(await addedSince(local, before)).toHaveLength(1);
  });

  it('a file of exactly 10 MiB is accepted (the limit is 10 MiB)', async () => {
    const { body } = await uploadOk(padTo(PNG, 10 * MiB), 'exactly-10-mib.png', 'image/png');
    expect(body.contentType).toBe('image/png');
  });

  it('a client file name with folders or ../ is refused with 400 and leaves nothing on disk', async () => {
    for (const name of ['../../../escaped.png', '..\\..\\escaped.png', 'uploads/files/escaped.png', '..']) {
      const error = await refusedWithoutTrace(() => upload(PNG, name, 'image/png'), 400, 'BAD_REQUEST');
      expect(error.message).toMatch(/plain name/);
    }
    expect((await local.listing()).filter((f) => /escaped/.test(f) || !f.startsWith('uploads/'))).toEqual([]);
  });

  it('a plain name with dots inside is kept as the name, never as a path', async () => {
    const { body, file } = await uploadOk(PNG, 'report..final.png', 'image/png');
    expect(body.name).toBe('report..final.png');
    expect(file).toMatch(/^uploads\/files\/[0-9a-f-]{36}\.png$/);
  });
});

describe('POST /storage/upload: nothing of an image payload survives re-encoding', () => {
  it('a payload in a PNG tEXt chunk or appended after IEND is not in the stored or served file', async () => {
    const crafted = Buffer.concat([withTextChunk(PNG, MARKER), Buffer.from(MARKER)]);
    // The payload is really there, and the file is still a valid PNG.
    expect(crafted.includes(MARKER)).toBe(true);
    expect((await sharp(crafted).metadata()).comments).toEqual([{ keyword: 'Comment', text: MARKER }]);

    const { body, stored } = await uploadOk(crafted, 'innocent.png', 'image/png');
    expect(body.contentType).toBe('image/png');
    expect(stored.includes(MARKER)).toBe(false);
    expect(stored.includes('PAYLOAD-')).toBe(false);
    expect(await pixels(stored)).toEqual(await pixels(PNG));
    const served = await download(local.app, body.url, owner.accessToken);
    expect(served.bytes.includes('PAYLOAD-')).toBe(false);
  });

  it('a JPEG loses its EXIF (e.g. a description or location) in the stored file', async () => {
    const jpeg = await solidImage(32, 32)
      .jpeg()
      .withExif({ IFD0: { ImageDescription: MARKER } })
      .toBuffer();
    expect(jpeg.includes('PAYLOAD-')).toBe(true);
    const { body, stored } = await uploadOk(jpeg, 'camera.jpg', 'image/jpeg');
    expect(body.contentType).toBe('image/jpeg');
    expect(stored.includes('PAYLOAD-')).toBe(false);
    expect((await sharp(stored).metadata()).exif).toBeUndefined();
  });

  // docs/decisions.md: "Storage accepts PNG, JPEG, WebP, GIF and PDF; images are decoded and re-encoded
  // (sharp, at most ~40 megapixels), so no payload of the original survives."
  it('a GIF is an image too: a payload appended after its trailer is not in the stored file', async () => {
    const gif = Buffer.concat([await solidImage(16, 16, '#ff8800').gif().toBuffer(), Buffer.from(MARKER)]);
    const before = await local.listing();
    const res = await upload(gif, 'animation.gif', 'image/gif');
    const added = await addedSince(local, before);
    if (res.status === 201) {
      expect(res.body.contentType).toBe('image/gif');
      expect(added).toHaveLength(1);
      const stored = await fs.readFile(path.join(local.root, added[0]));
      expect(stored.includes('PAYLOAD-')).toBe(false);
    } else {
      // Refusing such a GIF outright is acceptable too, provided nothing is kept.
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(added).toEqual([]);
    }
  });

  it('a GIF whose header claims 50,000 x 50,000 pixels is refused and nothing is kept', async () => {
    const res = await refusedWithoutTrace(
      () => upload(gifClaiming(50_000, 50_000), 'bomb.gif', 'image/gif'),
      400,
      'BAD_REQUEST',
    );
    expect(res.message).toMatch(/too large|could not be read/);
  });
});

describe('POST /storage/upload: refused files leave nothing on disk and no row', () => {
  it.each([
    ['a text file named .png', () => upload(TEXT_AS_PNG, 'photo.png', 'image/png'), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['an HTML file', () => upload(HTML, 'page.html', 'text/html'), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    [
      'an HTML file named .png and sent as image/png',
      () => upload(HTML, 'page.png', 'image/png'),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    ['an SVG with a script', () => upload(SVG_WITH_SCRIPT, 'icon.svg', 'image/svg+xml'), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    [
      'a PNG header claiming 50,000 x 50,000 pixels',
      () => upload(pngClaiming(50_000, 50_000), 'bomb.png', 'image/png'),
      400,
      'BAD_REQUEST',
    ],
    [
      'a PNG whose data is cut off after its header',
      () => upload(PNG.subarray(0, 60), 'cut.png', 'image/png'),
      400,
      'BAD_REQUEST',
    ],
    ['a 0-byte file', () => upload(Buffer.alloc(0), 'empty.png', 'image/png'), 400, 'BAD_REQUEST'],
    [
      'a file one byte over 10 MiB',
      () => upload(padTo(PNG, 10 * MiB + 1), 'big.png', 'image/png'),
      413,
      'PAYLOAD_TOO_LARGE',
    ],
    [
      'a form without the file field',
      () =>
        api('POST', '/storage/upload', {
          token: owner.accessToken,
          form: (() => {
            const f = new FormData();
            f.append('workspaceId', owner.workspaceId);
            return f;
          })(),
        }),
      400,
      'BAD_REQUEST',
    ],
    [
      'the file in a wrongly named field',
      () =>
        api('POST', '/storage/upload', { token: owner.accessToken, form: form('upload', PNG, 'a.png', 'image/png') }),
      400,
      'BAD_REQUEST',
    ],
    [
      'two files in the field',
      () =>
        api('POST', '/storage/upload', {
          token: owner.accessToken,
          form: (() => {
            const f = form('file', PNG, 'a.png', 'image/png');
            f.append('file', new Blob([new Uint8Array(PNG)], { type: 'image/png' }), 'b.png');
            return f;
          })(),
        }),
      400,
      'BAD_REQUEST',
    ],
    [
      'a JSON body instead of a form',
      () => api('POST', '/storage/upload', { token: owner.accessToken, body: { file: PNG.toString('base64') } }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
  ] as const)('%s', async (_label, send, status, code) => {
    await refusedWithoutTrace(send, status, code);
  });

  it('the 0-byte and wrong-field answers tell the user what to send', async () => {
    expect((await refusedWithoutTrace(() => upload(Buffer.alloc(0), 'empty.png'), 400, 'BAD_REQUEST')).message).toMatch(
      /empty/i,
    );
    expect(
      (
        await refusedWithoutTrace(
          () => api('POST', '/storage/upload', { token: owner.accessToken, form: form('upload', PNG, 'a.png') }),
          400,
          'BAD_REQUEST',
        )
      ).message,
    ).toContain('"file"');
    expect(
      (await refusedWithoutTrace(() => upload(padTo(PNG, 10 * MiB + 1), 'big.png'), 413, 'PAYLOAD_TOO_LARGE')).message,
    ).toMatch(/10 MiB/);
    expect(
      (await refusedWithoutTrace(() => upload(TEXT_AS_PNG, 'photo.png', 'image/png'), 415, 'UNSUPPORTED_MEDIA_TYPE'))
        .message,
    ).toMatch(/image\/png/);
  });

  it('refuses an anonymous caller (401), a VIEWER (403) and an outsider naming the workspace (404)', async () => {
    await refusedWithoutTrace(() => upload(PNG, 'a.png', 'image/png', ''), 401, 'UNAUTHORIZED');
    await refusedWithoutTrace(
      () => api('POST', '/storage/upload', { form: form('file', PNG, 'a.png', 'image/png') }),
      401,
      'UNAUTHORIZED',
    );
    await refusedWithoutTrace(
      () => upload(PNG, 'a.png', 'image/png', viewer.accessToken, { workspaceId: owner.workspaceId }),
      403,
      'PERMISSION_DENIED',
    );
    await refusedWithoutTrace(
      () => upload(PNG, 'a.png', 'image/png', outsider.accessToken, { workspaceId: owner.workspaceId }),
      404,
      'NOT_FOUND',
    );
  });

  it('answers an anonymous caller or a bad token with 401 before the body has arrived (nothing is buffered)', async () => {
    const full = expectError(
      await api('POST', '/storage/upload', { form: form('file', PNG, 'a.png', 'image/png') }),
      401,
      'UNAUTHORIZED',
    );
    for (const token of [undefined, 'not-a-token']) {
      const early = await answerBeforeBody(local.app, '/storage/upload', 'file', token);
      expect(early, 'no answer while the body was still open').toBeDefined();
      expect(early).toMatchObject({ status: 401, body: { code: 'UNAUTHORIZED', message: full.message } });
    }
  });

  it('answers a VIEWER (403) and an outsider (404) naming the workspace in the query before the body has arrived', async () => {
    const url = `/storage/upload?workspaceId=${owner.workspaceId}`;
    const viewerAnswer = await answerBeforeBody(local.app, url, 'file', viewer.accessToken);
    expect(viewerAnswer).toMatchObject({ status: 403, body: { code: 'PERMISSION_DENIED' } });
    const outsiderAnswer = await answerBeforeBody(local.app, url, 'file', outsider.accessToken);
    expect(outsiderAnswer).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
  });
});

describe('POST /profile/avatar', () => {
  const sendAvatar = (token: string, data: Buffer, name = 'me.png', type = 'image/png', field = 'avatar') =>
    api('POST', '/profile/avatar', { token, form: form(field, data, name, type) });

  const avatarKey = async (userId: string) =>
    (
      await local.app.deps.db
        .selectFrom('users')
        .select('avatar_key')
        .where('id', '=', userId)
        .executeTakeFirstOrThrow()
    ).avatar_key;

  it('re-encodes a PNG to a 512 x 512 WebP, stored under a generated name and served to people who share a workspace', async () => {
    const user = member;
    const before = await local.listing();
    const res = await sendAvatar(user.accessToken, await pngOf(300, 200, '#aa2222'), 'portrait of me.png');
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      avatarUrl: `/users/${user.userId}/avatar`,
      contentType: 'image/webp',
      width: 512,
      height: 512,
    });

    const added = await addedSince(local, before);
    expect(added).toHaveLength(1);
    expect(added[0]).toMatch(/^uploads\/avatars\/[0-9a-f-]{36}\.webp$/);
    const stored = await fs.readFile(path.join(local.root, added[0]));
    expect(res.body.size).toBe(stored.length);

    // The owner shares a workspace with the member and sees it; one who shares none does not, nor does an
    // anonymous caller.
    const served = await download(local.app, res.body.avatarUrl, owner.accessToken);
    expect(served.status).toBe(200);
    expect(served.bytes.equals(stored)).toBe(true);
    expect(served.headers.get('content-type')).toBe('image/webp');
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    const meta = await sharp(served.bytes).metadata();
    expect(meta).toMatchObject({ format: 'webp', width: 512, height: 512 });
    expectError(await api('GET', res.body.avatarUrl), 401, 'UNAUTHORIZED');
    expectError(await api('GET', res.body.avatarUrl, { token: outsider.accessToken }), 404, 'NOT_FOUND');
    expect((await download(local.app, res.body.avatarUrl, member.accessToken)).status).toBe(200);
  });

  it.each([
    ['JPEG', () => solidImage(640, 480).jpeg().toBuffer(), 'image/jpeg'],
    ['WebP', () => solidImage(100, 700).webp().toBuffer(), 'image/webp'],
  ] as const)('accepts a %s and makes it 512 x 512', async (_label, make, type) => {
    const user = await registerAndLogin(local.app.api, { prefix: 'up-avatar' });
    const res = await sendAvatar(user.accessToken, await make(), 'me.bin', type);
    expect(res.status, res.text).toBe(201);
    const served = await download(local.app, res.body.avatarUrl, user.accessToken);
    expect(await sharp(served.bytes).metadata()).toMatchObject({ format: 'webp', width: 512, height: 512 });
  });

  it('a payload in a tEXt chunk or appended after IEND does not survive in the stored avatar', async () => {
    const user = await registerAndLogin(local.app.api, { prefix: 'up-avatar' });
    const crafted = Buffer.concat([withTextChunk(await pngOf(64, 64, '#22aa22'), MARKER), Buffer.from(MARKER)]);
    expect(crafted.indexOf(MARKER)).not.toBe(crafted.lastIndexOf(MARKER)); // both copies are in the upload
    expect((await sharp(crafted).metadata()).comments?.[0]?.text).toBe(MARKER);

    const before = await local.listing();
    const res = await sendAvatar(user.accessToken, crafted);
    expect(res.status, res.text).toBe(201);
    const [file] = await addedSince(local, before);
    const stored = await fs.readFile(path.join(local.root, file));
    expect(stored.includes('PAYLOAD-')).toBe(false);
    expect(stored.includes('<script')).toBe(false);
    const served = await download(local.app, res.body.avatarUrl, user.accessToken);
    expect(served.bytes.includes('PAYLOAD-')).toBe(false);
    const meta = await sharp(served.bytes).metadata();
    expect(meta).toMatchObject({ format: 'webp', width: 512, height: 512 });
    expect(meta.comments).toBeUndefined();
  });

  it('a new avatar replaces the previous one on disk', async () => {
    const user = await registerAndLogin(local.app.api, { prefix: 'up-avatar' });
    const before = await local.listing();
    expect((await sendAvatar(user.accessToken, await pngOf(50, 50, '#000000'))).status).toBe(201);
    const [first] = await addedSince(local, before);
    expect((await sendAvatar(user.accessToken, await pngOf(50, 50, '#ffffff'))).status).toBe(201);
    const now = await addedSince(local, before);
    expect(now).toHaveLength(1);
    expect(now[0]).not.toBe(first);
    expect(`uploads/${await avatarKey(user.userId)}`).toBe(now[0]);
  });

  it('10 parallel uploads by one user leave exactly one stored avatar, the one the user points at', async () => {
    const user = await registerAndLogin(local.app.api, { prefix: 'up-avatar-race' });
    const before = await local.listing();
    const images = await Promise.all(
      Array.from({ length: 10 }, (_, i) => pngOf(40, 40, `#${(i * 20).toString(16).padStart(2, '0')}8040`)),
    );
    const answers = await Promise.all(images.map((image) => sendAvatar(user.accessToken, image)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(201));
    const added = await addedSince(local, before);
    expect(added).toEqual([`uploads/${await avatarKey(user.userId)}`]);
  });

  it('a 36-character id that is not a UUID is a 404 (not a 500)', async () => {
    for (const id of ['-'.repeat(36), 'a'.repeat(36)]) {
      expectError(await api('GET', `/users/${id}/avatar`, { token: owner.accessToken }), 404, 'NOT_FOUND');
    }
  });

  it('a file of exactly 2 MiB is accepted (the limit is 2 MiB)', async () => {
    const user = await registerAndLogin(local.app.api, { prefix: 'up-avatar' });
    const res = await sendAvatar(user.accessToken, padTo(await pngOf(20, 20), 2 * MiB));
    expect(res.status, res.text).toBe(201);
  });

  describe('refusals keep the current avatar and store nothing', () => {
    let user: Session;
    let current: Buffer;

    beforeAll(async () => {
      user = await registerAndLogin(local.app.api, { prefix: 'up-avatar-refused' });
      const res = await sendAvatar(user.accessToken, await pngOf(30, 30, '#123456'));
      if (res.status !== 201) throw new Error(`avatar failed: ${res.status} ${res.text}`);
      current = (await download(local.app, res.body.avatarUrl, user.accessToken)).bytes;
    });

    it.each([
      ['an SVG', () => SVG_WITH_SCRIPT, 'me.svg', 'image/svg+xml', 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['an SVG named .png', () => SVG_WITH_SCRIPT, 'me.png', 'image/png', 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['a GIF', () => solidImage(16, 16).gif().toBuffer(), 'me.gif', 'image/gif', 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['a PDF', () => PDF, 'me.png', 'image/png', 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['a text file named .png', () => TEXT_AS_PNG, 'me.png', 'image/png', 415, 'UNSUPPORTED_MEDIA_TYPE'],
      [
        'a PNG header claiming 50,000 x 50,000 pixels',
        () => pngClaiming(50_000, 50_000),
        'me.png',
        'image/png',
        400,
        'BAD_REQUEST',
      ],
      ['a 0-byte file', () => Buffer.alloc(0), 'me.png', 'image/png', 400, 'BAD_REQUEST'],
      [
        'a file one byte over 2 MiB',
        async () => padTo(await pngOf(20, 20), 2 * MiB + 1),
        'me.png',
        'image/png',
        413,
        'PAYLOAD_TOO_LARGE',
      ],
    ] as const)('%s', async (_label, make, name, type, status, code) => {
      const keyBefore = await avatarKey(user.userId);
      const diskBefore = await local.listing();
      expectError(await sendAvatar(user.accessToken, await make(), name, type), status, code);
      expect(await local.listing()).toEqual(diskBefore);
      expect(await avatarKey(user.userId)).toBe(keyBefore);
      const served = await download(local.app, `/users/${user.userId}/avatar`, user.accessToken);
      expect(served.bytes.equals(current)).toBe(true);
    });

    it('the file in the field `file` instead of `avatar`, and an anonymous caller', async () => {
      const diskBefore = await local.listing();
      expect(
        expectError(await sendAvatar(user.accessToken, PNG, 'me.png', 'image/png', 'file'), 400, 'BAD_REQUEST').message,
      ).toContain('"avatar"');
      expectError(
        await api('POST', '/profile/avatar', { form: form('avatar', PNG, 'me.png', 'image/png') }),
        401,
        'UNAUTHORIZED',
      );
      expect(await local.listing()).toEqual(diskBefore);
    });

    it('an anonymous caller or a bad token gets 401 before the body has arrived', async () => {
      for (const token of [undefined, 'not-a-token']) {
        const early = await answerBeforeBody(local.app, '/profile/avatar', 'avatar', token);
        expect(early, 'no answer while the body was still open').toBeDefined();
        expect(early).toMatchObject({ status: 401, body: { code: 'UNAUTHORIZED' } });
      }
      expect(await avatarKey(user.userId)).not.toBeNull();
    });
  });
});

describe('GET /storage/provider-status', () => {
  it('answers LOCAL, configured, with the documented limits and nothing about where files live', async () => {
    const res = await api('GET', '/storage/provider-status', { token: viewer.accessToken });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      provider: 'LOCAL',
      configured: true,
      maxUploadBytes: 10 * MiB,
      acceptedTypes: ['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/pdf'],
    });
    expect(res.text).not.toContain(local.root);
    expect(res.text).not.toContain(path.basename(local.root));
    expect(res.text).not.toContain('uploads');
    expect(res.text).not.toMatch(/STORAGE_LOCAL_DIR|\/tmp|data\//);
  });

  it('needs a signed-in caller', async () => {
    expectError(await api('GET', '/storage/provider-status'), 401, 'UNAUTHORIZED');
    expectError(await api('GET', '/storage/provider-status', { token: 'not-a-token' }), 401, 'UNAUTHORIZED');
  });
});
