// STORAGE_PROVIDER=S3 through the official SDK against a real S3-compatible server (s3rver on loopback,
// tests/helpers/s3-server.ts). Every upload route stores under a generated key with its content type and
// serves the bytes back to workspace members only; refused files store nothing; missing settings are a
// 503 STORAGE_NOT_CONFIGURED without stopping start-up; a provider that is down or refuses the keys is a
// friendly 502 STORAGE_PROVIDER_ERROR that repeats nothing it said and records nothing. The secret key
// and the key id never come back in a response or a log line.
import crypto from 'node:crypto';
import { sql } from 'kysely';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../server/platform/config.js';
import { startTestApp, testEnv, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, type ApiResponse, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import { startS3, type TestS3 } from '../helpers/s3-server.js';

const SECRET = `s3-secret-canary-${crypto.randomBytes(16).toString('hex')}`;
ledger.sent(SECRET, 'S3_SECRET_ACCESS_KEY');

const MiB = 1024 * 1024;
const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
);
let PNG: Buffer;

let s3: TestS3;
let app: TestApp;
let owner: Session;
let outsider: Session;
const apps: TestApp[] = [];

async function startApp(env: Record<string, string>) {
  const started = await startTestApp(env);
  apps.push(started);
  return started;
}

function form(field: string, data: Buffer, name: string, type = 'application/octet-stream') {
  const f = new FormData();
  f.append(field, new Blob([data], { type }), name);
  return f;
}

/** A GET whose body is kept as bytes. */
async function download(target: TestApp, path: string, token?: string) {
  const res = await fetch(target.url + path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const bytes = Buffer.from(await res.arrayBuffer());
  ledger.observe(`GET ${path}`, bytes.toString('latin1'));
  return { status: res.status, headers: res.headers, bytes };
}

const fileRows = (target: TestApp, workspaceId: string) =>
  target.deps.db
    .selectFrom('files')
    .select(['id', 'storage_key', 'content_type', 'size_bytes'])
    .where('workspace_id', '=', workspaceId)
    .execute();

/** Nothing the provider or its settings could have said: no key id, bucket, address or SDK wording. */
function expectNothingOfTheProvider(res: ApiResponse) {
  for (const word of [
    SECRET,
    s3.accessKeyId,
    s3.bucket,
    s3.endpoint,
    '127.0.0.1',
    'ECONNREFUSED',
    'InvalidAccessKeyId',
    'Access Key',
    'AWS',
    'amz',
  ]) {
    expect(res.text, word).not.toContain(word);
  }
}

beforeAll(async () => {
  PNG = await sharp({ create: { width: 16, height: 12, channels: 3, background: '#c03030' } })
    .png()
    .toBuffer();
  s3 = await startS3();
  ledger.sent(s3.accessKeyId, 'S3_ACCESS_KEY_ID');
  app = await startApp(s3.env(SECRET));
  owner = await registerAndLogin(app.api, { prefix: 's3-owner' });
  outsider = await registerAndLogin(app.api, { prefix: 's3-outsider' });
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await s3?.close();
});

describe('STORAGE_PROVIDER=S3 with its settings', () => {
  it('provider-status answers S3, configured, and names neither key', async () => {
    const res = await app.api('GET', '/storage/provider-status', { token: owner.accessToken });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ provider: 'S3', configured: true, maxUploadBytes: 10 * MiB });
    expect(res.text).not.toContain(s3.accessKeyId);
    expect(res.text).not.toContain(SECRET);
  });

  it('POST /storage/upload stores the object in the bucket under a generated key, with its content type', async () => {
    const before = await s3.keys();
    const res = await app.api('POST', '/storage/upload', {
      token: owner.accessToken,
      form: form('file', PNG, 'holiday photo.png', 'text/plain'),
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      workspaceId: owner.workspaceId,
      contentType: 'image/png',
      url: `/storage/files/${res.body.id}`,
    });

    const added = (await s3.keys()).filter((k) => !before.includes(k));
    expect(added).toHaveLength(1);
    const key = added[0];
    expect(key).toMatch(/^files\/[0-9a-f-]{36}\.png$/);
    expect(key).not.toMatch(/holiday|photo/);
    const [row] = (await fileRows(app, owner.workspaceId)).filter((r) => r.id === res.body.id);
    expect(row).toMatchObject({ storage_key: key, content_type: 'image/png' });
    const object = await s3.object(key);
    expect(object.contentType).toBe('image/png');
    expect(object.body.length).toBe(res.body.size);
  });

  it('serves the same bytes back with nosniff to a member, and refuses an outsider and an anonymous caller', async () => {
    const up = await app.api('POST', '/storage/upload', {
      token: owner.accessToken,
      form: form('file', PDF, 'report.pdf', 'application/pdf'),
    });
    expect(up.status).toBe(201);
    expect(up.body.contentType).toBe('application/pdf');
    const [row] = (await fileRows(app, owner.workspaceId)).filter((r) => r.id === up.body.id);
    expect((await s3.object(row.storage_key)).body.equals(PDF)).toBe(true);

    const mine = await download(app, up.body.url, owner.accessToken);
    expect(mine.status).toBe(200);
    expect(mine.bytes.equals(PDF)).toBe(true);
    expect(mine.headers.get('content-type')).toBe('application/pdf');
    expect(mine.headers.get('x-content-type-options')).toBe('nosniff');
    expect(mine.headers.get('content-disposition')).toMatch(/^attachment/);

    expectError(await app.api('GET', up.body.url, { token: outsider.accessToken }), 404, 'NOT_FOUND');
    expectError(await app.api('GET', up.body.url), 401, 'UNAUTHORIZED');
  });

  it('serves a re-encoded image back exactly as the bucket holds it', async () => {
    const up = await app.api('POST', '/storage/upload', {
      token: owner.accessToken,
      form: form('file', PNG, 'pixels.png', 'image/png'),
    });
    expect(up.status).toBe(201);
    const [row] = (await fileRows(app, owner.workspaceId)).filter((r) => r.id === up.body.id);
    const stored = await s3.object(row.storage_key);
    const mine = await download(app, up.body.url, owner.accessToken);
    expect(mine.status).toBe(200);
    expect(mine.bytes.equals(stored.body)).toBe(true);
    expect(mine.headers.get('content-type')).toBe('image/png');
    expect(mine.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('stores avatars in the bucket, serves them back, and removes the previous one when replaced', async () => {
    const user = await registerAndLogin(app.api, { prefix: 's3-avatar' });
    const before = await s3.keys();
    const first = await app.api('POST', '/profile/avatar', {
      token: user.accessToken,
      form: form('avatar', PNG, 'me.png', 'image/png'),
    });
    expect(first.status).toBe(201);
    const [firstKey, ...more] = (await s3.keys()).filter((k) => !before.includes(k));
    expect(more).toEqual([]);
    expect(firstKey).toMatch(/^avatars\/[0-9a-f-]{36}\.webp$/);
    const stored = await s3.object(firstKey);
    expect(stored.contentType).toBe('image/webp');
    expect((await sharp(stored.body).metadata()).width).toBe(512);

    const served = await download(app, first.body.avatarUrl, user.accessToken);
    expect(served.status).toBe(200);
    expect((await download(app, first.body.avatarUrl, outsider.accessToken)).status).toBe(404);
    expect(served.bytes.equals(stored.body)).toBe(true);
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');

    const second = await app.api('POST', '/profile/avatar', {
      token: user.accessToken,
      form: form('avatar', PNG, 'me-again.png', 'image/png'),
    });
    expect(second.status).toBe(201);
    const now = (await s3.keys()).filter((k) => !before.includes(k));
    expect(now).toHaveLength(1);
    expect(now[0]).not.toBe(firstKey);
  });

  it('stores workspace logos in the bucket and serves them to members only', async () => {
    const before = await s3.keys();
    const res = await app.api('POST', `/workspaces/${owner.workspaceId}/branding/logo`, {
      token: owner.accessToken,
      form: form('logo', PNG, 'logo.png', 'image/png'),
    });
    expect(res.status).toBe(200);
    expect(res.body.logoUrl).toMatch(/^\/storage\/files\/[0-9a-f-]{36}$/);
    const added = (await s3.keys()).filter((k) => !before.includes(k));
    expect(added).toHaveLength(1);
    expect(added[0]).toMatch(/^logos\/[0-9a-f-]{36}\.webp$/);
    const stored = await s3.object(added[0]);
    expect(stored.contentType).toBe('image/webp');

    const mine = await download(app, res.body.logoUrl, owner.accessToken);
    expect(mine.status).toBe(200);
    expect(mine.bytes.equals(stored.body)).toBe(true);
    expect(mine.headers.get('content-type')).toBe('image/webp');
    expect(mine.headers.get('x-content-type-options')).toBe('nosniff');
    expectError(await app.api('GET', res.body.logoUrl, { token: outsider.accessToken }), 404, 'NOT_FOUND');
  });

  it('refused files (text named .png, empty, too large) leave nothing in the bucket or the database', async () => {
    const bucketBefore = await s3.keys();
    const rowsBefore = await fileRows(app, owner.workspaceId);
    const token = owner.accessToken;

    expectError(
      await app.api('POST', '/storage/upload', {
        token,
        form: form('file', Buffer.from('just some text, honest\n'), 'fake.png', 'image/png'),
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expectError(
      await app.api('POST', '/storage/upload', {
        token,
        form: form('file', Buffer.alloc(0), 'empty.png', 'image/png'),
      }),
      400,
      'BAD_REQUEST',
    );
    const oversize = Buffer.concat([PNG, Buffer.alloc(10 * MiB + 1 - PNG.length)]);
    expectError(
      await app.api('POST', '/storage/upload', { token, form: form('file', oversize, 'big.png', 'image/png') }),
      413,
      'PAYLOAD_TOO_LARGE',
    );
    expectError(
      await app.api('POST', '/profile/avatar', {
        token,
        form: form('avatar', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), 'a.png', 'image/png'),
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expectError(
      await app.api('POST', '/profile/avatar', {
        token,
        form: form('avatar', oversize.subarray(0, 2 * MiB + 1), 'a.png', 'image/png'),
      }),
      413,
      'PAYLOAD_TOO_LARGE',
    );
    expectError(
      await app.api('POST', `/workspaces/${owner.workspaceId}/branding/logo`, {
        token,
        form: form('logo', PDF, 'logo.png', 'image/png'),
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );

    expect(await s3.keys()).toEqual(bucketBefore);
    expect(await fileRows(app, owner.workspaceId)).toEqual(rowsBefore);
  });
});

describe('when the database fails after the object is stored', () => {
  it('removes the object again: a failed upload, avatar or logo leaves nothing in the bucket', async () => {
    const victim = await registerAndLogin(app.api, { prefix: 's3-db-fails' });
    const token = victim.accessToken;
    // The database refuses this user's rows only (other files share the database).
    const fn = `refuse_${crypto.randomBytes(4).toString('hex')}`;
    const run = (statement: string) => sql.raw(statement).execute(app.deps.db);
    await run(
      `create function ${fn}() returns trigger language plpgsql as $$ begin raise exception 'refused by the test'; end $$`,
    );
    await run(
      `create trigger ${fn} before insert on files for each row when (new.workspace_id = '${victim.workspaceId}') execute function ${fn}()`,
    );
    await run(
      `create trigger ${fn} before update of avatar_key on users for each row when (new.id = '${victim.userId}') execute function ${fn}()`,
    );
    try {
      const before = await s3.keys();
      expectError(
        await app.api('POST', '/storage/upload', { token, form: form('file', PDF, 'report.pdf', 'application/pdf') }),
        500,
        'INTERNAL_SERVER_ERROR',
      );
      expectError(
        await app.api('POST', '/profile/avatar', { token, form: form('avatar', PNG, 'me.png', 'image/png') }),
        500,
        'INTERNAL_SERVER_ERROR',
      );
      expectError(
        await app.api('POST', `/workspaces/${victim.workspaceId}/branding/logo`, {
          token,
          form: form('logo', PNG, 'logo.png', 'image/png'),
        }),
        500,
        'INTERNAL_SERVER_ERROR',
      );
      expect(await s3.keys()).toEqual(before);
      expect(await fileRows(app, victim.workspaceId)).toEqual([]);
    } finally {
      await run(`drop trigger ${fn} on files`);
      await run(`drop trigger ${fn} on users`);
      await run(`drop function ${fn}()`);
    }
  });
});

describe('STORAGE_PROVIDER=S3 without its keys', () => {
  let bare: TestApp;
  let user: Session;

  beforeAll(async () => {
    bare = await startApp({ ...s3.env(''), S3_ACCESS_KEY_ID: '', S3_SECRET_ACCESS_KEY: '' });
    user = await registerAndLogin(bare.api, { prefix: 's3-bare' });
  });

  it('parses: no S3 setting is required at start-up', () => {
    expect(() => parseConfig(testEnv({ STORAGE_PROVIDER: 'S3' }))).not.toThrow();
    expect(parseConfig(testEnv({ STORAGE_PROVIDER: 's3' }))).toMatchObject({
      STORAGE_PROVIDER: 'S3',
      S3_REGION: 'us-east-1',
      S3_FORCE_PATH_STYLE: false,
    });
    expect(() => parseConfig(testEnv({ STORAGE_PROVIDER: 'S3', S3_ENDPOINT: 'not a url' }))).toThrow(
      /S3_ENDPOINT: must be a URL/,
    );
  });

  it('starts, and provider-status answers S3, not configured', async () => {
    expect((await bare.api('GET', '/health')).status).toBe(200);
    const res = await bare.api('GET', '/storage/provider-status', { token: user.accessToken });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ provider: 'S3', configured: false });
  });

  it('answers every upload 503 STORAGE_NOT_CONFIGURED and stores nothing', async () => {
    const bucketBefore = await s3.keys();
    const token = user.accessToken;
    for (const res of [
      await bare.api('POST', '/storage/upload', { token, form: form('file', PNG, 'a.png', 'image/png') }),
      await bare.api('POST', '/profile/avatar', { token, form: form('avatar', PNG, 'a.png', 'image/png') }),
      await bare.api('POST', `/workspaces/${user.workspaceId}/branding/logo`, {
        token,
        form: form('logo', PNG, 'a.png', 'image/png'),
      }),
    ]) {
      const body = expectError(res, 503, 'STORAGE_NOT_CONFIGURED');
      expect(body.message).toMatch(/not available/);
      expectNothingOfTheProvider(res);
    }
    expect(await s3.keys()).toEqual(bucketBefore);
    expect(await fileRows(bare, user.workspaceId)).toEqual([]);
    const me = await bare.deps.db
      .selectFrom('users')
      .select('avatar_key')
      .where('id', '=', user.userId)
      .executeTakeFirstOrThrow();
    expect(me.avatar_key).toBeNull();
  });
});

describe('when the S3 provider fails', () => {
  it('a refused key id is a friendly 502 that repeats nothing the provider said and records nothing', async () => {
    const refused = await startApp({ ...s3.env(SECRET), S3_ACCESS_KEY_ID: 'AKIAUNKNOWNKEY0000000' });
    const user = await registerAndLogin(refused.api, { prefix: 's3-refused' });
    const bucketBefore = await s3.keys();
    const res = await refused.api('POST', '/storage/upload', {
      token: user.accessToken,
      form: form('file', PNG, 'a.png', 'image/png'),
    });
    const body = expectError(res, 502, 'STORAGE_PROVIDER_ERROR');
    expect(body.message).toBe(
      'The file storage refused our credentials. Nothing was saved; please try again in a moment.',
    );
    expectNothingOfTheProvider(res);
    expect(res.text).not.toContain('AKIAUNKNOWNKEY0000000');
    expect(await s3.keys()).toEqual(bucketBefore);
    expect(await fileRows(refused, user.workspaceId)).toEqual([]);
  });

  it('a provider that is down is a friendly 502 on upload and serve-back, and nothing is half-recorded', async () => {
    const own = await startS3();
    try {
      const down = await startApp(own.env(SECRET));
      const user = await registerAndLogin(down.api, { prefix: 's3-down' });
      const token = user.accessToken;
      const stored = await down.api('POST', '/storage/upload', {
        token,
        form: form('file', PDF, 'kept.pdf', 'application/pdf'),
      });
      expect(stored.status).toBe(201);
      await own.stop();

      const rowsBefore = await fileRows(down, user.workspaceId);
      const attempts = [
        await down.api('POST', '/storage/upload', { token, form: form('file', PNG, 'a.png', 'image/png') }),
        await down.api('POST', '/profile/avatar', { token, form: form('avatar', PNG, 'a.png', 'image/png') }),
        await down.api('POST', `/workspaces/${user.workspaceId}/branding/logo`, {
          token,
          form: form('logo', PNG, 'a.png', 'image/png'),
        }),
      ];
      for (const res of attempts) {
        const body = expectError(res, 502, 'STORAGE_PROVIDER_ERROR');
        expect(body.message).toBe(
          'The file storage could not be reached. Nothing was saved; please try again in a moment.',
        );
        expect(res.text).not.toContain(own.endpoint);
        expectNothingOfTheProvider(res);
      }
      expect(await fileRows(down, user.workspaceId)).toEqual(rowsBefore);
      const me = await down.deps.db
        .selectFrom('users')
        .select('avatar_key')
        .where('id', '=', user.userId)
        .executeTakeFirstOrThrow();
      expect(me.avatar_key).toBeNull();
      const ws = await down.deps.db
        .selectFrom('workspaces')
        .select('logo_file_id')
        .where('id', '=', user.workspaceId)
        .executeTakeFirstOrThrow();
      expect(ws.logo_file_id).toBeNull();

      const serve = await down.api('GET', stored.body.url, { token });
      expectError(serve, 502, 'STORAGE_PROVIDER_ERROR');
      expectNothingOfTheProvider(serve);

      // The log says what failed, for the operator, without the keys.
      const failures = down.logs.filter((l) => l.includes('STORAGE_PROVIDER_ERROR'));
      expect(failures.length).toBeGreaterThanOrEqual(4);
      expect(failures[0]).toContain('"providerCode":"ECONNREFUSED"');
    } finally {
      await own.close();
    }
  });
});

describe('the S3 keys', () => {
  it('never appear in a log line of any app of this file', () => {
    expect(apps.length).toBeGreaterThanOrEqual(4);
    for (const a of apps) {
      const log = a.logs.join('\n');
      expect(log).not.toContain(SECRET);
      expect(log).not.toContain(s3.accessKeyId);
    }
  });
});
