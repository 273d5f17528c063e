// The graceful drain of an API instance (server/server.ts close(), what SIGTERM runs): for
// SHUTDOWN_DRAIN_DELAY_MS `GET /health` answers 503 `draining` while every other request is served (with
// `Connection: close`, so keep-alive clients reconnect elsewhere), then the listener closes, requests in
// flight get their real answer, and the process exits 0. In process (startTestApp) and as `npm start`.
//
// The slow request in flight is a webhook test delivery in direct mode: the API answers it once the
// receiver has answered, which the test delays.
import http from 'node:http';
import net from 'node:net';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../server/platform/config.js';
import { startTestApp, testEnv, type TestApp } from '../helpers/app.js';
import { apiClient, registerAndLogin, type Api, type Session } from '../helpers/http.js';
import { ledger } from '../helpers/secret-ledger.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { ServiceProcess, accepts, childEnv, killAll, startApi } from './processes.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A TCP gate in front of Postgres: it accepts connections and holds what they send until `open()`, so a
 * process starting behind it waits in its start-up for as long as the test wants.
 */
class Gate {
  connections = 0;
  private opened = false;
  private readonly held: Array<() => void> = [];
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    private readonly target: URL,
  ) {}

  static async start(target: URL): Promise<Gate> {
    let gate!: Gate;
    const server = net.createServer((client) => gate.accept(client));
    gate = new Gate(server, target);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    return gate;
  }

  /** `target` through the gate. */
  get url(): string {
    const through = new URL(this.target);
    through.host = `127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
    return through.toString();
  }

  open(): void {
    this.opened = true;
    for (const pass of this.held.splice(0)) pass();
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket) {
    this.connections += 1;
    this.track(client);
    client.pause();
    const pass = () => {
      const upstream = this.track(net.connect(Number(this.target.port || 5432), this.target.hostname));
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    };
    if (this.opened) pass();
    else this.held.push(pass);
  }

  private track(socket: net.Socket): net.Socket {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    return socket;
  }
}

const gates: Gate[] = [];
const apps: TestApp[] = [];
const receivers: WebhookReceiver[] = [];

afterAll(async () => {
  await killAll();
  for (const g of gates) await g.close();
  for (const a of apps) await a.close();
  for (const r of receivers) await r.close();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** One request on a keep-alive connection of `agent`, with the raw response headers (Connection among them). */
function request(url: string, opts: { method?: string; token?: string; agent?: http.Agent } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    const req = http.request(url, { method: opts.method ?? 'GET', headers, agent: opts.agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        ledger.observe(`${opts.method ?? 'GET'} ${new URL(url).pathname}`, text);
        resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** A signed-in owner with a webhook to `receiver` (its test delivery is the slow request). */
async function ownerWithWebhook(api: Api, receiver: WebhookReceiver): Promise<{ s: Session; testPath: string }> {
  const s = await registerAndLogin(api, { prefix: 'drain' });
  const hook = await api('POST', `/workspaces/${s.workspaceId}/webhooks`, {
    token: s.accessToken,
    body: { name: 'drain hook', url: receiver.url(), events: ['webhook.test'] },
  });
  expect(hook.status, hook.text).toBe(201);
  ledger.sent(hook.body.secret, 'a webhook signing secret');
  return { s, testPath: `/workspaces/${s.workspaceId}/webhooks/${hook.body.id}/test` };
}

/** Starts the slow request and waits until the API is inside it (the receiver has the delivery). */
async function slowRequestInFlight(api: Api, receiver: WebhookReceiver, s: Session, testPath: string) {
  let settled = false;
  const answer = api('POST', testPath, { token: s.accessToken }).finally(() => (settled = true));
  await receiver.waitForRequests(receiver.requests.length + 1);
  return { answer, settled: () => settled };
}

/** A receiver that holds its answers until the test calls release(): a slow endpoint, for as long as needed. */
async function receiverHolding() {
  const receiver = await WebhookReceiver.start();
  receivers.push(receiver);
  return receiver.reply({ status: 200, body: 'slow ok', held: true });
}

describe('SHUTDOWN_DRAIN_DELAY_MS', () => {
  it('defaults to 5000; 0 is allowed; a negative value is refused', () => {
    const env = testEnv({ SHUTDOWN_DRAIN_DELAY_MS: undefined });
    expect(parseConfig(env).SHUTDOWN_DRAIN_DELAY_MS).toBe(5000);
    expect(parseConfig({ ...env, SHUTDOWN_DRAIN_DELAY_MS: '0' }).SHUTDOWN_DRAIN_DELAY_MS).toBe(0);
    expect(() => parseConfig({ ...env, SHUTDOWN_DRAIN_DELAY_MS: '-1' })).toThrow(
      /SHUTDOWN_DRAIN_DELAY_MS: must be at least 0/,
    );
  });
});

describe('close() (what SIGTERM runs), in process', () => {
  const DRAIN_MS = 1_500;

  it(
    'drains first: /health 503 `draining`, other requests served with Connection: close; then the listener ' +
      'closes, the request in flight gets its real answer, and nothing holds the close up',
    async () => {
      const app = await startTestApp({ SHUTDOWN_DRAIN_DELAY_MS: String(DRAIN_MS), WEBHOOK_ALLOW_PRIVATE_URLS: 'true' });
      apps.push(app);
      const port = Number(new URL(app.url).port);
      const receiver = await receiverHolding();
      const { s, testPath } = await ownerWithWebhook(app.api, receiver);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

      const before = await request(`${app.url}/health`, { agent });
      expect(before).toMatchObject({ status: 200, body: { status: 'ok' } });
      expect(before.headers.connection).toBe('keep-alive');

      const slow = await slowRequestInFlight(app.api, receiver, s, testPath);
      const closeCalledAt = Date.now();
      const closed = app.close();

      const health = await request(`${app.url}/health`, { agent });
      expect(health.status).toBe(503);
      expect(health.body).toMatchObject({
        status: 'draining',
        version: expect.any(String),
        database: { reachable: true },
      });
      expect(health.headers.connection).toBe('close');
      const me = await request(`${app.url}/auth/me`, { token: s.accessToken, agent });
      expect(me.status).toBe(200);
      expect(me.body.user.email).toBe(s.email);
      expect(me.headers.connection).toBe('close');

      // The listener closes once the delay is over, while the slow request is still running.
      await waitFor(async () => !(await accepts(port)), {
        timeout: DRAIN_MS + 5_000,
        interval: 25,
        message: 'the listener to close',
      });
      expect(Date.now() - closeCalledAt).toBeGreaterThanOrEqual(DRAIN_MS - 50);
      expect(slow.settled()).toBe(false);

      receiver.release();
      const answer = await slow.answer;
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toMatchObject({ status: 'success', attempts: 1, responsePreview: 'slow ok' });
      // Its keep-alive connection was told to close too: no idle connection holds the close up.
      expect(answer.headers.get('connection')).toBe('close');
      const answeredAt = Date.now();
      await closed;
      expect(Date.now() - answeredAt).toBeLessThan(1_000);
      agent.destroy();
    },
    30_000,
  );

  it('SHUTDOWN_DRAIN_DELAY_MS=0: stops listening at once; the request in flight gets its real answer', async () => {
    const app = await startTestApp({ SHUTDOWN_DRAIN_DELAY_MS: '0', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' });
    apps.push(app);
    const port = Number(new URL(app.url).port);
    const receiver = await receiverHolding();
    const { s, testPath } = await ownerWithWebhook(app.api, receiver);

    const slow = await slowRequestInFlight(app.api, receiver, s, testPath);
    const closed = app.close();
    await waitFor(async () => !(await accepts(port)), { timeout: 500, interval: 10, message: 'the listener to close' });
    expect(slow.settled()).toBe(false);
    receiver.release();
    const answer = await slow.answer;
    expect(answer.body).toMatchObject({ status: 'success', attempts: 1, responseStatus: 200 });
    expect(answer.headers.get('connection')).toBe('close');
    const answeredAt = Date.now();
    await closed;
    expect(Date.now() - answeredAt).toBeLessThan(1_000);
  });
});

describe('npm start (server/index.ts as a child process)', () => {
  const env = (drainMs: number) =>
    childEnv({
      DATABASE_URL: inject('databaseUrl'),
      SHUTDOWN_DRAIN_DELAY_MS: String(drainMs),
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      LOG_LEVEL: 'info',
    });

  it(
    'on SIGTERM: /health answers 503 draining, other requests are served, the slow request in flight ' +
      'completes with its real answer, then the process exits 0',
    async () => {
      const DRAIN_MS = 1_500;
      const api = await startApi('drain', env(DRAIN_MS));
      const client = apiClient(api.url);
      const receiver = await receiverHolding();
      const { s, testPath } = await ownerWithWebhook(client, receiver);

      const slow = await slowRequestInFlight(client, receiver, s, testPath);
      const signalledAt = Date.now();
      api.proc.signal('SIGTERM');
      const health = await waitFor(
        async () => {
          const res = await client('GET', '/health');
          return res.status === 503 ? res : undefined;
        },
        { timeout: 2_000, interval: 20, message: '/health to say draining' },
      );
      expect(health.body).toMatchObject({ status: 'draining' });
      expect((await client('GET', '/auth/me', { token: s.accessToken })).status).toBe(200);
      // The slow request is still in flight when the drain delay is over and the listener closes.
      const port = Number(new URL(api.url).port);
      await waitFor(async () => !(await accepts(port)), {
        timeout: DRAIN_MS + 5_000,
        interval: 25,
        message: 'the listener to close',
      });
      expect(slow.settled()).toBe(false);
      receiver.release();

      const answer = await slow.answer;
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toMatchObject({ status: 'success', attempts: 1, responsePreview: 'slow ok' });
      const answeredAt = Date.now();
      const exit = await api.proc.exited;
      expect(exit, api.proc.tail()).toMatchObject({ code: 0, signal: null });
      expect(exit.at - signalledAt).toBeGreaterThanOrEqual(DRAIN_MS);
      expect(exit.at - answeredAt).toBeLessThan(2_000);
      const messages = api.proc.logs().map((l) => l.msg);
      expect(messages).toContain('shutdown complete');
      // Nothing went wrong: the only lines above info are the request log's of the draining 503s (a 5xx).
      const drainingHealth = (l: Record<string, unknown>) => l.route === '/health' && l.status === 503;
      const troubles = api.proc.logs().filter((l) => (l.level as number) >= 40 && !drainingHealth(l));
      expect(troubles, api.proc.tail()).toEqual([]);
    },
    60_000,
  );

  it('a second signal during the drain ends it at once; the close is still orderly (exit 0)', async () => {
    const api = await startApi('drain twice', env(60_000));
    const client = apiClient(api.url);
    api.proc.signal('SIGTERM');
    await waitFor(async () => (await client('GET', '/health')).status === 503, {
      timeout: 2_000,
      interval: 20,
      message: '/health to say draining',
    });
    const secondAt = Date.now();
    api.proc.signal('SIGINT');
    const exit = await api.proc.exited;
    expect(exit, api.proc.tail()).toMatchObject({ code: 0, signal: null });
    expect(exit.at - secondAt).toBeLessThan(5_000);
    expect(api.proc.logs().map((l) => l.msg)).toContain('shutdown complete');
  }, 60_000);
  it('a SIGTERM during start-up does not kill it: it finishes starting, then shuts down (exit 0)', async () => {
    const gate = await Gate.start(new URL(inject('databaseUrl')));
    gates.push(gate);
    // A drain of a minute: the shutdown of a server nobody has seen healthy yet must skip it.
    const settings = { ...env(60_000), DATABASE_URL: gate.url };
    const proc = ServiceProcess.start('signal at start-up', 'server/index.ts', settings);
    await waitFor(() => gate.connections > 0, { timeout: 30_000, message: 'the start-up to reach the database' });
    proc.signal('SIGTERM');
    gate.open();
    const exit = await proc.exitWithin(20_000);
    expect(exit, proc.tail()).toMatchObject({ code: 0, signal: null });
    const messages = proc.logs().map((l) => l.msg);
    const expected = ['signal during start-up: shutting down once started', 'listening'];
    expect(messages).toEqual(expect.arrayContaining(expected));
    expect(messages.at(-1)).toBe('shutdown complete');
  }, 60_000);
});
