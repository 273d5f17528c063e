// The private redis-server of tests/helpers/redis-server.ts does what its methods say: frozen, it keeps
// connections open and answers nothing until thawed (then answers what it was sent); stopped, it refuses
// connections; restarted, it is empty on the same port.
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { RedisServer } from './redis-server.js';

const servers: RedisServer[] = [];
const clients: Redis[] = [];

afterAll(async () => {
  for (const c of clients) c.disconnect();
  for (const s of servers) await s.close();
});

const client = (url: string) => {
  const c = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 300 });
  c.on('error', () => undefined);
  clients.push(c);
  return c;
};

it('freeze holds replies until thaw; stop refuses; restart is empty on the same port', async () => {
  const server = await RedisServer.start();
  servers.push(server);
  expect(server.url).toBe(`redis://127.0.0.1:${server.port}`);
  const c = client(server.url);
  await new Promise((resolve) => c.once('ready', resolve));
  await c.set('k', 'v');

  const patient = new Redis(server.url); // no command timeout: waits as long as it takes
  clients.push(patient);
  await patient.ping();

  server.freeze();
  expect(server.isFrozen).toBe(true);
  await expect(c.get('k')).rejects.toThrow(/timed out/i);
  const late = patient.set('k', 'sent-while-frozen');
  server.thaw();
  expect(await late).toBe('OK');
  expect(await c.get('k')).toBe('sent-while-frozen');

  await server.stop();
  expect(server.isRunning).toBe(false);
  await expect(c.get('k')).rejects.toThrow();

  await server.restart();
  expect(server.isRunning).toBe(true);
  const fresh = client(server.url);
  await new Promise((resolve) => fresh.once('ready', resolve));
  expect(await fresh.get('k')).toBeNull();
});
