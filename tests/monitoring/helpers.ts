// Helpers of the monitoring tests: reading every monitoring answer, requests whose timing is under the
// test's control (a body sent in two halves), a bounded-concurrency driver for bulk traffic, and a TCP
// proxy in front of Postgres so a test can take the database away from a running app and bring it back.
import crypto from 'node:crypto';
import http from 'node:http';
import { expect } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { ApiResponse, RequestOptions } from '../helpers/http.js';
import { ledger, trackBody } from '../helpers/secret-ledger.js';
import { sleep } from '../helpers/wait.js';

export type { ErrorRecord, RequestRecord } from '../../server/platform/monitoring.js';

export interface Page<T> {
  items: T[];
  page: number;
  limit: number;
  total: number;
  totalPages: number;
}

export interface RouteStat {
  route: string;
  count: number;
  avgMs: number;
  p95Ms: number;
}

export interface Summary {
  window: { requests: number; from: string | null; to: string | null };
  successRate: number | null;
  statusClasses: Record<string, number>;
  statusCodes: Record<string, number>;
  slowRequests: number;
  errors: number;
  topRoutesByCount: RouteStat[];
  topRoutesByP95: RouteStat[];
  timeline: Array<{ minute: string; requests: number; errors: number; serverErrors: number }>;
}

export interface Status {
  status: 'ok' | 'degraded';
  version: string;
  uptimeSeconds: number;
  database: { reachable: boolean };
  memory: { rssMb: number; heapUsedMb: number; heapTotalMb: number; systemFreeMb: number };
  logging: {
    monitoringEnabled: boolean;
    requestLoggingEnabled: boolean;
    errorLoggingEnabled: boolean;
    logLevel: string;
    slowRequestMs: number;
    errorLogRetentionDays: number;
  };
  buffers: { requests: { size: number; capacity: number }; errors: { size: number; capacity: number } };
}

export const REQUEST_RECORD_KEYS = [
  'durationMs',
  'method',
  'path',
  'requestId',
  'slow',
  'status',
  'timestamp',
  'userId',
  'workspaceId',
];
export const ERROR_RECORD_KEYS = [...REQUEST_RECORD_KEYS, 'code', 'message', 'name'].sort();

/** The five admin monitoring routes. */
export const MONITORING_ROUTES: Array<[method: string, path: string]> = [
  ['GET', '/admin/monitoring/status'],
  ['GET', '/admin/monitoring/summary'],
  ['GET', '/admin/monitoring/errors'],
  ['GET', '/admin/monitoring/requests'],
  ['POST', '/admin/monitoring/clear'],
];

/** A request id the service keeps as sent (a safe token), unique to this run. */
export const rid = (label: string) => `mon-${label}-${crypto.randomBytes(4).toString('hex')}`;

export const hex = (bytes = 12) => crypto.randomBytes(bytes).toString('hex');

/** app.api with a chosen X-Request-Id; checks the service echoed it. */
export async function send(
  app: TestApp,
  method: string,
  path: string,
  requestId: string,
  opts: RequestOptions = {},
): Promise<ApiResponse> {
  const res = await app.api(method, path, { ...opts, headers: { ...opts.headers, 'x-request-id': requestId } });
  expect(res.headers.get('x-request-id'), `${method} ${path}: X-Request-Id`).toBe(requestId);
  return res;
}

/** A monitoring read as `token`, expected to answer 200. */
export async function read<T>(app: TestApp, token: string, path: string): Promise<T> {
  const res = await app.api<T>('GET', path, { token });
  expect(res.status, `GET ${path}: ${res.text.slice(0, 300)}`).toBe(200);
  return res.body;
}

/** Every page of /admin/monitoring/{requests,errors} (query without page/limit), and the raw texts. */
export async function allPages<T>(
  app: TestApp,
  token: string,
  path: string,
  query = '',
): Promise<{ items: T[]; texts: string[] }> {
  const items: T[] = [];
  const texts: string[] = [];
  for (let page = 1; page <= 100; page++) {
    const res = await app.api<Page<T>>('GET', `${path}?limit=100&page=${page}${query ? `&${query}` : ''}`, { token });
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    texts.push(res.text);
    items.push(...res.body.items);
    if (page >= res.body.totalPages) break;
  }
  return { items, texts };
}

/**
 * The text of every monitoring answer a reader can get: status, summary, every page of errors and
 * requests, over REST and /trpc.
 */
export async function everyMonitoringAnswer(app: TestApp, token: string): Promise<string[]> {
  const texts: string[] = [];
  for (const path of ['/admin/monitoring/status', '/admin/monitoring/summary']) {
    const res = await app.api('GET', path, { token });
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    texts.push(res.text);
  }
  texts.push(...(await allPages(app, token, '/admin/monitoring/errors')).texts);
  texts.push(...(await allPages(app, token, '/admin/monitoring/requests')).texts);
  const input = encodeURIComponent(JSON.stringify({ limit: 100 }));
  for (const path of [
    '/trpc/monitoring.status',
    '/trpc/monitoring.summary',
    `/trpc/monitoring.errors?input=${input}`,
    `/trpc/monitoring.requests?input=${input}`,
  ]) {
    const res = await app.api('GET', path, { token });
    expect(res.status, `${path}: ${res.text.slice(0, 300)}`).toBe(200);
    texts.push(res.text);
  }
  return texts;
}

/**
 * POSTs a JSON body in two halves `delayMs` apart (the service cannot answer before the body is complete),
 * so the request lasts about `delayMs` on the server (a little less: its clock starts once it has the headers).
 * Feeds the secret ledger like app.api.
 */
export function slowJsonPost(
  app: TestApp,
  path: string,
  body: unknown,
  delayMs: number,
  headers: Record<string, string> = {},
): Promise<{ status: number; requestId: string; body: any; text: string }> {
  trackBody(body);
  const payload = Buffer.from(JSON.stringify(body));
  const half = Math.floor(payload.length / 2);
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, app.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(payload.length), ...headers },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        ledger.observe(`POST ${path}`, text);
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, requestId: String(res.headers['x-request-id']), body: parsed, text });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.write(payload.subarray(0, half));
    // A fixed wait: the request's real duration is what is tested (the slow-request log; the status read
    // after it counts on the seconds of uptime it took), so the client really pauses between the halves.
    void sleep(delayMs).then(() => req.end(payload.subarray(half)));
  });
}

/** Runs `task(i)` for i in [0, total) with at most `concurrency` in flight. */
export async function drive(total: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
}

/**
 * A plain GET over a keep-alive agent, for bulk traffic (several times cheaper than fetch in-process).
 * Answers the status; the body is discarded.
 */
export function rawGet(agent: http.Agent, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

/** The status class of a status code, as the monitoring filters write it. */
export const classOf = (status: number) => `${Math.floor(status / 100)}xx`;
