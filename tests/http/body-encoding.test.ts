// Content-Encoding of request bodies on the three kinds of routes that read one: the JSON procedures (REST
// and /trpc), the provider webhooks (raw bytes, signed) and the multipart uploads. A body that does not
// decode is a 400, an encoding the service does not decode a 415, a valid gzip, deflate or br body works
// as if sent as is, and the size limit is on the decoded body (a small bomb is a 413, never inflated).
import http from 'node:http';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, type ApiResponse, type Session } from '../helpers/http.js';
import { ledger, trackBody } from '../helpers/secret-ledger.js';
import { signStripe, stripeEvent } from '../helpers/fake-stripe.js';
import { lemonEvent, signLemon } from '../helpers/fake-lemonsqueezy.js';
import { randomHex } from '../billing/helpers.js';
import { form, pngOf } from '../uploads/helpers.js';

const WHSEC = `whsec_enc${randomHex(12)}`;
const LEMON_SECRET = `lemon-enc-${randomHex(12)}`;

let app: TestApp;
let user: Session;
beforeAll(async () => {
  // MOCK billing (its development webhook exists), with both processors' webhook secrets set.
  app = await startTestApp({
    BILLING_PROVIDER: 'MOCK',
    PROCESSOR_A_WEBHOOK_SECRET: WHSEC,
    PROCESSOR_B_WEBHOOK_SECRET: LEMON_SECRET,
  });
  user = await registerAndLogin(app.api, { prefix: 'enc' });
});
afterAll(() => app?.close());

const ENCODERS = {
  gzip: (b: Buffer) => zlib.gzipSync(b),
  deflate: (b: Buffer) => zlib.deflateSync(b),
  br: (b: Buffer) => zlib.brotliCompressSync(b),
} as const;
type Encoding = keyof typeof ENCODERS;
const ENCODINGS = Object.keys(ENCODERS) as Encoding[];

/** Bytes that are not valid for any of the three, and a valid stream cut short. */
const NOT_ENCODED = Buffer.from('{"email":"a@b.c","password":"not compressed at all"}');
const truncated = (encoding: Encoding) =>
  ENCODERS[encoding](Buffer.from(JSON.stringify({ padding: 'x'.repeat(2000) }))).subarray(0, 12);

const json = { 'content-type': 'application/json' };
const A_PATH = '/billing/webhooks/processor-a';
const B_PATH = '/billing/webhooks/processor-b';
const MOCK_PATH = '/billing/webhooks/mock';
const WEBHOOK_PATHS = [A_PATH, B_PATH, MOCK_PATH];
const stripeSigned = (payload: string) => ({ ...json, 'stripe-signature': signStripe(payload, WHSEC) });
const lemonSigned = (payload: string | Buffer) => ({ ...json, 'x-signature': signLemon(payload, LEMON_SECRET) });

function send(method: string, path: string, raw: Buffer, encoding: string, headers: Record<string, string> = json) {
  return app.api(method, path, { raw, headers: { ...headers, 'content-encoding': encoding } });
}

/** A `/trpc` error answer: tRPC's envelope with our values in `data`. */
function expectTrpcError(res: ApiResponse, status: number, key: keyof typeof TRPC_ERROR_CODES_BY_KEY, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.body.error).toMatchObject({
    message: expect.any(String),
    code: TRPC_ERROR_CODES_BY_KEY[key],
    data: { code, httpStatus: status, requestId: res.headers.get('x-request-id') },
  });
  expect(res.text).not.toMatch(/node_modules|\n\s+at /);
}

/** POSTs `chunks` as a chunked body (each written on its own, the next once the previous has gone out). */
function chunkedPost(path: string, chunks: Buffer[], encoding: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${app.url}${path}`, {
      method: 'POST',
      headers: { ...json, 'content-encoding': encoding, 'transfer-encoding': 'chunked' },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString();
        ledger.observe(`POST ${path}`, text);
        resolve({ status: res.statusCode ?? 0, text });
      });
    });
    const writeFrom = (i: number) => {
      if (i === chunks.length) return req.end();
      req.write(chunks[i], () => writeFrom(i + 1));
    };
    writeFrom(0);
  });
}

/** `size` zero bytes, compressed by `encoding` as a stream (never held whole). */
async function bomb(encoding: Encoding, size: number): Promise<Buffer> {
  const stream =
    encoding === 'gzip'
      ? zlib.createGzip({ level: 9 })
      : encoding === 'deflate'
        ? zlib.createDeflate({ level: 9 })
        : zlib.createBrotliCompress({
            params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5, [zlib.constants.BROTLI_PARAM_LGWIN]: 24 },
          });
  const parts: Buffer[] = [];
  stream.on('data', (c: Buffer) => parts.push(c));
  const ended = new Promise((resolve) => stream.on('end', resolve));
  const zeros = Buffer.alloc(16 * 1024 * 1024);
  for (let left = size; left > 0; left -= zeros.length) {
    const chunk = left >= zeros.length ? zeros : zeros.subarray(0, left);
    if (!stream.write(chunk)) await new Promise((r) => stream.once('drain', r));
  }
  stream.end();
  await ended;
  return Buffer.concat(parts);
}

describe('a body that is not valid for its Content-Encoding (was a 500)', () => {
  it.each(ENCODINGS)('%s: 400 BAD_REQUEST on REST (POST /auth/login), in the error shape', async (encoding) => {
    for (const raw of [NOT_ENCODED, truncated(encoding)]) {
      const err = expectError(await send('POST', '/auth/login', raw, encoding), 400, 'BAD_REQUEST');
      expect(err.message).toMatch(/Content-Encoding/);
    }
  });

  it.each(ENCODINGS)("%s: 400 on /trpc (POST /trpc/auth.login), in tRPC's envelope", async (encoding) => {
    for (const raw of [NOT_ENCODED, truncated(encoding)]) {
      expectTrpcError(await send('POST', '/trpc/auth.login', raw, encoding), 400, 'BAD_REQUEST', 'BAD_REQUEST');
    }
  });

  it.each(ENCODINGS)('%s: 400 on the provider webhooks and the MOCK webhook', async (encoding) => {
    for (const raw of [NOT_ENCODED, truncated(encoding)]) {
      const a = await send('POST', A_PATH, raw, encoding, stripeSigned(raw.toString('latin1')));
      expectError(a, 400, 'BAD_REQUEST');
      expectError(await send('POST', B_PATH, raw, encoding, lemonSigned(raw)), 400, 'BAD_REQUEST');
      expectError(await send('POST', MOCK_PATH, raw, encoding), 400, 'BAD_REQUEST');
    }
    // The signature of the payload does not make undecodable bytes acceptable.
    const payload = stripeEvent('customer.created', { id: `cus_${randomHex(6)}`, object: 'customer' });
    expectError(await send('POST', A_PATH, NOT_ENCODED, encoding, stripeSigned(payload)), 400, 'BAD_REQUEST');
  });

  it.each(ENCODINGS)(
    '%s: a valid stream followed by more bytes is a 400 on REST, /trpc and the webhooks',
    async (encoding) => {
      const body = { email: user.email, password: user.password };
      trackBody(body);
      const valid = ENCODERS[encoding](Buffer.from(JSON.stringify(body)));
      const mock = ENCODERS[encoding](
        Buffer.from(JSON.stringify({ id: `evt_${randomHex(8)}`, type: 'something.else' })),
      );
      const event = stripeEvent('customer.created', { id: `cus_${randomHex(6)}`, object: 'customer' });
      const signedEvent = ENCODERS[encoding](Buffer.from(event));
      const tails: Array<[string, Buffer]> = [
        ['garbage', Buffer.from('garbage')],
        ['one zero byte', Buffer.from([0])],
      ];
      // A second gzip member is gzip (RFC 1952: the members' data, one after the other); not so for the others.
      if (encoding !== 'gzip') tails.push(['a second stream', ENCODERS[encoding](Buffer.from('{"email":"x@y.z"}'))]);
      for (const [label, tail] of tails) {
        const rest = await send('POST', '/auth/login', Buffer.concat([valid, tail]), encoding);
        const err = expectError(rest, 400, 'BAD_REQUEST');
        expect(err.message, label).toMatch(/Content-Encoding/);
        const trpc = await send('POST', '/trpc/auth.login', Buffer.concat([valid, tail]), encoding);
        expectTrpcError(trpc, 400, 'BAD_REQUEST', 'BAD_REQUEST');
        expectError(await send('POST', MOCK_PATH, Buffer.concat([mock, tail]), encoding), 400, 'BAD_REQUEST');
        const a = await send('POST', A_PATH, Buffer.concat([signedEvent, tail]), encoding, stripeSigned(event));
        expectError(a, 400, 'BAD_REQUEST');
      }
      // The same streams alone are read.
      expect((await send('POST', '/auth/login', valid, encoding)).status).toBe(200);
      if (encoding === 'gzip') {
        const text = JSON.stringify(body);
        const members = [text.slice(0, 10), text.slice(10)].map((t) => ENCODERS.gzip(Buffer.from(t)));
        expect((await send('POST', '/auth/login', Buffer.concat(members), encoding)).status).toBe(200);
      }
      expect((await send('POST', MOCK_PATH, mock, encoding)).status).toBe(200);
      expect((await send('POST', A_PATH, signedEvent, encoding, stripeSigned(event))).status).toBe(200);
    },
  );

  it.each(ENCODINGS)('%s: trailing bytes in a later chunk of a chunked body are a 400 too', async (encoding) => {
    const body = { email: user.email, password: user.password };
    trackBody(body);
    const valid = ENCODERS[encoding](Buffer.from(JSON.stringify(body)));
    const res = await chunkedPost('/auth/login', [valid, Buffer.from('garbage')], encoding);
    expect(res.status, res.text).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({ code: 'BAD_REQUEST' });
    const alone = await chunkedPost('/auth/login', [valid.subarray(0, 5), valid.subarray(5)], encoding);
    expect(alone.status, alone.text).toBe(200);
  });

  it('an empty body that claims gzip is a 400 too, and the server keeps serving', async () => {
    expectError(await send('POST', '/auth/login', Buffer.alloc(0), 'gzip'), 400, 'BAD_REQUEST');
    expect((await app.api('GET', '/health')).status).toBe(200);
  });
});

const UNDECODED = ['zstd', 'foo', 'gzip, gzip', 'x-gzip', 'compress'];

describe('an encoding the service does not decode', () => {
  it.each(UNDECODED)('%s: 415 on REST, /trpc and the webhooks', async (encoding) => {
    const raw = ENCODERS.gzip(Buffer.from('{}'));
    const err = expectError(await send('POST', '/auth/login', raw, encoding), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(err.message).toMatch(/gzip, deflate or br/);
    const trpc = await send('POST', '/trpc/auth.login', raw, encoding);
    expectTrpcError(trpc, 415, 'UNSUPPORTED_MEDIA_TYPE', 'UNSUPPORTED_MEDIA_TYPE');
    for (const path of WEBHOOK_PATHS) {
      expectError(await send('POST', path, raw, encoding), 415, 'UNSUPPORTED_MEDIA_TYPE');
    }
  });

  it('identity is the body as is', async () => {
    const body = { email: user.email, password: user.password };
    trackBody(body);
    const res = await send('POST', '/auth/login', Buffer.from(JSON.stringify(body)), 'identity');
    expect(res.status, res.text).toBe(200);
  });
});

describe('a valid compressed body works as if sent as is', () => {
  it.each(ENCODINGS)('%s: REST and /trpc sign in', async (encoding) => {
    const body = { email: user.email, password: user.password };
    trackBody(body);
    const raw = ENCODERS[encoding](Buffer.from(JSON.stringify(body)));
    const rest = await send('POST', '/auth/login', raw, encoding.toUpperCase());
    expect(rest.status, rest.text).toBe(200);
    expect(rest.body.user.id).toBe(user.userId);
    const trpc = await send('POST', '/trpc/auth.login', raw, encoding);
    expect(trpc.status, trpc.text).toBe(200);
    expect(trpc.body.result.data.user.id).toBe(user.userId);
    // Validation still reads the decoded body.
    const invalid = await send('POST', '/auth/login', ENCODERS[encoding](Buffer.from('{"email":5}')), encoding);
    const bad = expectError(invalid, 400, 'BAD_REQUEST');
    expect(bad.issues?.map((i) => i.path).sort()).toEqual(['email', 'password']);
  });

  it.each(ENCODINGS)('%s: the provider webhooks check the signature over the decoded payload', async (encoding) => {
    // Stripe signs the JSON payload it sends; a compressed delivery carries the same payload, encoded.
    const a = stripeEvent('customer.created', { id: `cus_${randomHex(6)}`, object: 'customer' });
    const signedA = await send('POST', A_PATH, ENCODERS[encoding](Buffer.from(a)), encoding, stripeSigned(a));
    expect(signedA.status, signedA.text).toBe(200);
    expect(signedA.body).toEqual({ received: true, outcome: 'ignored' });
    // A signature over the compressed bytes is not the provider's: refused.
    const other = stripeEvent('customer.created', { id: `cus_${randomHex(6)}`, object: 'customer' });
    const compressedA = ENCODERS[encoding](Buffer.from(other));
    const signedOver = stripeSigned(compressedA.toString('latin1'));
    const overCompressed = await send('POST', A_PATH, compressedA, encoding, signedOver);
    expectError(overCompressed, 400, 'INVALID_SIGNATURE');

    const b = lemonEvent('order_created', { type: 'orders', id: randomHex(6), attributes: { status: 'paid' } });
    const compressedB = ENCODERS[encoding](Buffer.from(b));
    const signedB = await send('POST', B_PATH, compressedB, encoding, lemonSigned(b));
    expect(signedB.status, signedB.text).toBe(200);
    expectError(await send('POST', B_PATH, compressedB, encoding, lemonSigned(compressedB)), 400, 'INVALID_SIGNATURE');
  });

  it.each(ENCODINGS)('%s: the MOCK webhook reads the decoded event', async (encoding) => {
    const raw = ENCODERS[encoding](Buffer.from(JSON.stringify({ id: `evt_${randomHex(8)}`, type: 'something.else' })));
    const res = await send('POST', MOCK_PATH, raw, encoding);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true, outcome: 'ignored' });
  });
});

describe('uploads (multipart), which store nothing they refuse', () => {
  it.each(['gzip', 'deflate', 'br', 'foo'])('a %s-encoded form is 415 (sent as is only)', async (encoding) => {
    const body = form('file', await pngOf(8, 8), 'a.png', 'image/png');
    const multipart = new Request('http://x/', { method: 'POST', body });
    const raw = Buffer.from(await multipart.arrayBuffer());
    const headers = {
      'content-type': multipart.headers.get('content-type')!,
      authorization: `Bearer ${user.accessToken}`,
    };
    const encoded = encoding === 'foo' ? raw : ENCODERS[encoding as Encoding](raw);
    for (const path of ['/storage/upload', '/profile/avatar', `/workspaces/${user.workspaceId}/branding/logo`]) {
      const err = expectError(await send('POST', path, encoded, encoding, headers), 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(err.message).toMatch(/Content-Encoding/);
    }
    const files = app.deps.db.selectFrom('files').select('id').where('workspace_id', '=', user.workspaceId);
    expect(await files.execute()).toEqual([]);
  });
});

describe('the size limit applies to the decoded body', () => {
  it.each(ENCODINGS)('%s: a body under 1 MiB decoding to 100 MB is 413 on REST, /trpc, webhooks', async (encoding) => {
    const raw = await bomb(encoding, 100 * 1024 * 1024);
    expect(raw.length).toBeLessThan(1024 * 1024);
    expectError(await send('POST', '/auth/login', raw, encoding), 413, 'PAYLOAD_TOO_LARGE');
    const trpc = await send('POST', '/trpc/auth.login', raw, encoding);
    expectTrpcError(trpc, 413, 'PAYLOAD_TOO_LARGE', 'PAYLOAD_TOO_LARGE');
    for (const path of WEBHOOK_PATHS) expectError(await send('POST', path, raw, encoding), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('a 1 KB br body that decodes to 1 GB is refused after inflating about the limit, not all of it', async () => {
    const raw = await bomb('br', 1024 * 1024 * 1024);
    expect(raw.length).toBeLessThan(1024);
    // Inflating all of it costs about 2 s of CPU here; the refusal costs a few milliseconds.
    const cpu = process.cpuUsage();
    const started = performance.now();
    expectError(await send('POST', '/auth/login', raw, 'br'), 413, 'PAYLOAD_TOO_LARGE');
    expectError(await send('POST', MOCK_PATH, raw, 'br'), 413, 'PAYLOAD_TOO_LARGE');
    const used = process.cpuUsage(cpu);
    expect((used.user + used.system) / 1000, 'CPU ms spent on two refusals').toBeLessThan(500);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('a compressed body that decodes to just under 1 MiB is read', async () => {
    const body = { email: user.email, password: user.password, padding: 'x'.repeat(1024 * 1024 - 200) };
    trackBody({ password: user.password });
    const res = await send('POST', '/auth/login', ENCODERS.gzip(Buffer.from(JSON.stringify(body))), 'gzip');
    // Read whole (the unknown field is dropped by the input schema): the credentials sign in.
    expect(res.status, res.text.slice(0, 300)).toBe(200);
  });
});
