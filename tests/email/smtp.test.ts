import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';
import { STRONG_PASSWORD, uniqueEmail } from '../helpers/http.js';

interface Received {
  from: string;
  to: string[];
  data: string;
  user?: string;
}

/** The text of a quoted-printable MIME body, enough to read links. */
const decodeQuotedPrintable = (s: string) =>
  s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

// A real SMTP server on loopback that records what it receives.
let smtp: SMTPServer;
const received: Received[] = [];
let app: TestApp;

beforeAll(async () => {
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    authOptional: false,
    allowInsecureAuth: true,
    onAuth(auth, _session, cb) {
      if (auth.username === 'mailer' && auth.password === 'smtp-pass-123') return cb(null, { user: auth.username });
      return cb(new Error('bad credentials'));
    },
    onData(stream, session, cb) {
      let data = '';
      stream.on('data', (c: Buffer) => (data += c.toString()));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          data: decodeQuotedPrintable(data),
          user: session.user,
        });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const port = (smtp.server.address() as AddressInfo).port;
  app = await startTestApp({
    EMAIL_PROVIDER: 'SMTP',
    SMTP_HOST: '127.0.0.1',
    SMTP_PORT: String(port),
    SMTP_USER: 'mailer',
    SMTP_PASS: 'smtp-pass-123',
    EMAIL_FROM: 'Service <no-reply@tests.local>',
  });
});

afterAll(async () => {
  await app.close();
  await new Promise<void>((resolve) => smtp.close(resolve));
});

describe('EMAIL_PROVIDER=SMTP', () => {
  it('sends the verification mail through the SMTP server, authenticated, and logs nothing to email_logs', async () => {
    const email = uniqueEmail('smtp');
    expect(
      (await app.api('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name: 'Sam' } })).status,
    ).toBe(201);
    // Sent after the answer: the request does not wait for the mail server.
    await waitFor(() => received.some((m) => m.to.includes(email)), { timeout: 5_000 });
    const mail = received.find((m) => m.to.includes(email));
    expect(mail).toBeDefined();
    expect(mail!.user).toBe('mailer');
    expect(mail!.from).toBe('no-reply@tests.local');
    expect(mail!.data).toMatch(/Subject: Verify your e-mail address/);
    expect(mail!.data).toMatch(/http:\/\/app\.tests\.local\/verify-email\?token=/);
    const logged = await app.deps.db.selectFrom('email_logs').select('id').where('to', '=', email).execute();
    expect(logged).toEqual([]);
  });

  it('still answers forgot-password 200 when the SMTP server refuses the mail, and logs the failure', async () => {
    const email = uniqueEmail('smtp-down');
    await app.api('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name: 'Sam' } });
    const broken = await startTestApp({
      EMAIL_PROVIDER: 'SMTP',
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: '1',
      SMTP_USER: 'mailer',
      SMTP_PASS: 'x',
    });
    try {
      const res = await broken.api('POST', '/auth/forgot-password', { body: { email } });
      expect(res.status).toBe(200);
      await waitFor(() => broken.logs.some((l) => l.includes('sending mail failed')), { timeout: 5_000 });
    } finally {
      await broken.close();
    }
  });

  it('answers forgot-password as fast for an account as for an unknown address when the SMTP server stalls (it waited 30 s: a tell)', async () => {
    // Accepts connections and never greets.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const stalled = await startTestApp({
      EMAIL_PROVIDER: 'SMTP',
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String((silent.address() as AddressInfo).port),
    });
    try {
      const email = uniqueEmail('smtp-stalled');
      expect(
        (await stalled.api('POST', '/auth/register', { body: { email, password: STRONG_PASSWORD, name: 'Sam' } }))
          .status,
      ).toBe(201);
      const timed = async (address: string) => {
        const started = performance.now();
        const res = await stalled.api('POST', '/auth/forgot-password', { body: { email: address } });
        return { res, ms: performance.now() - started };
      };
      const known = await timed(email);
      const unknown = await timed(uniqueEmail('smtp-nobody'));
      expect(known.res.status).toBe(200);
      expect(known.res.body).toEqual(unknown.res.body);
      expect(known.ms).toBeLessThan(2_000);
    } finally {
      await stalled.close();
      silent.close();
    }
  }, 30_000);
});
