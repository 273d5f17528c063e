// `npm run bench:scim`: directory sync at scale. One API instance (a child process, as bench/run.ts starts
// them) on a throw-away database with one workspace of BENCH_SCIM_USERS (100,000) SCIM users; autocannon
// at BENCH_CONNECTIONS (50) loads, in turn, GET /auth/me (the baseline), GET /scim/v2/Users?filter=userName
// eq "..." (a different user each request) and a page of 100 by startIndex (from the middle of the list).
// Target: each SCIM scenario's p99 at most 2x the p99 of GET /auth/me in the same run.
// The floor, in the same run at the same connections: bench/bare-server.ts (bare Express and pg, no
// authentication, validation or counters) answers the same pages (the same startIndex sequence) with the
// same ListResponse JSON (the API's toScimUser; checked equal before the load) from one prepared keyset
// statement; and its GET /json, the machine's baseline. When the floor's own p99 is above 2x that of
// GET /auth/me, no implementation reaches the target on this machine, and the output says so. Prints a
// table; exits non-zero only when the run itself crashes.
//
// Environment: BENCH_POSTGRES_URL (admin URL, default postgres://postgres@127.0.0.1:5432/postgres),
// BENCH_DURATION (seconds per scenario, default 10), BENCH_CONNECTIONS (default 50), BENCH_SCIM_USERS.
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { freePort, queryRows } from './local.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const USERS = Number(process.env.BENCH_SCIM_USERS ?? 100_000);
const TARGET = 2;

const hex = (n: number) => crypto.randomBytes(n).toString('hex');

async function call(url: string, method: string, route: string, body?: unknown, token?: string) {
  const res = await fetch(url + route, {
    method,
    headers: {
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json().catch(() => undefined)) as Record<string, any> | undefined;
  if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(json)}`);
  return json!;
}

async function load(name: string, url: string, token: string | undefined, paths: () => string) {
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION,
    headers: token ? { authorization: `Bearer ${token}` } : {},
    requests: [{ setupRequest: (req) => ({ ...req, path: paths() }) }],
  });
  const errors = result.errors + result.non2xx;
  return { name, rate: result.requests.average, p99: result.latency.p99, errors };
}

async function main() {
  const name = `bench_scim_${Date.now().toString(36)}_${hex(3)}`;
  await queryRows(ADMIN_URL, `create database "${name}"`);
  const dbUrl = new URL(ADMIN_URL);
  dbUrl.pathname = `/${name}`;
  const port = await freePort();
  const api = `http://127.0.0.1:${port}`;
  const barePort = await freePort();
  const bare = `http://127.0.0.1:${barePort}`;
  let child: ChildProcess | undefined;
  let bareChild: ChildProcess | undefined;
  try {
    child = spawn(process.execPath, ['--import', 'tsx', 'server/index.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        NODE_ENV: 'production',
        LOG_LEVEL: 'warn',
        HOST: '127.0.0.1',
        PORT: String(port),
        DATABASE_URL: dbUrl.toString(),
        RATE_LIMIT_ENABLED: 'false',
        JWT_ACCESS_SECRET: hex(32),
        JWT_REFRESH_SECRET: hex(32),
        WEBHOOK_SECRET_ENCRYPTION_KEY: hex(32),
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    bareChild = spawn(process.execPath, ['--import', 'tsx', 'bench/bare-server.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        NODE_ENV: 'production',
        HOST: '127.0.0.1',
        PORT: String(barePort),
        BCRYPT_COST: '4',
        BENCH_DATABASE_URL: dbUrl.toString(),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    for (const ready of [`${api}/health`, `${bare}/json`])
      for (let i = 0; ; i++) {
        const ok = await fetch(ready).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) break;
        if (i > 240) throw new Error(`${ready} did not answer within 60 s`);
        await new Promise((r) => setTimeout(r, 250));
      }
    const email = `bench-${hex(4)}@bench.example`;
    await call(api, 'POST', '/auth/register', { email, password: 'Bench-pass-123', name: 'Bench' });
    const session = await call(api, 'POST', '/auth/login', { email, password: 'Bench-pass-123' });
    const token: string = session.accessToken;
    const workspace = await call(api, 'POST', '/workspaces', { name: 'Directory bench' }, token);
    const scim = await call(api, 'POST', `/workspaces/${workspace.id}/scim/tokens`, { name: 'bench' }, token);
    const domain = 'bench-corp.example';
    const seeded = Date.now();
    await queryRows(
      dbUrl.toString(),
      `insert into workspace_domains (workspace_id, domain, status, verification_token, verified_at) values ($1, $2, 'VERIFIED', 'x', now())`,
      [workspace.id, domain],
    );
    await queryRows(
      dbUrl.toString(),
      `with u as (
         insert into users (email, name, email_verified_at, provisioned_by_workspace_id)
         select 'person' || i || '@' || $2, 'Person ' || i, now(), $1 from generate_series(1, $3::int) as i
         returning id, email)
       insert into workspace_members (workspace_id, user_id, role, external_id, scim_managed, created_at)
       select $1, u.id, 'MEMBER', 'ext-' || u.email, true, now() - (row_number() over () || ' ms')::interval from u`,
      [workspace.id, domain, USERS],
    );
    await queryRows(dbUrl.toString(), 'vacuum (analyze) users, workspace_members');
    console.log(`seeded ${USERS.toLocaleString('en')} SCIM users in ${((Date.now() - seeded) / 1000).toFixed(1)} s`);

    const rawToken: string = scim.rawToken;
    const pageOf = (from: string, startIndex: number) =>
      fetch(`${from}/scim/v2/Users?startIndex=${startIndex}&count=100`, {
        headers: { authorization: `Bearer ${rawToken}` },
      }).then((r) => r.text());
    const floorPath = (startIndex: number) =>
      `/scim-page?workspaceId=${workspace.id}&startIndex=${startIndex}&count=100`;
    // The floor answers what the API does (but for the port in the `location`s and `$ref`s).
    const sample = Math.floor(USERS / 2) + 1;
    const [apiPage, floorText] = await Promise.all([
      pageOf(api, sample),
      fetch(bare + floorPath(sample)).then((r) => r.text()),
    ]);
    const same = apiPage === floorText.replaceAll(bare, api);
    let n = 0;
    const pages = () => {
      n = (n * 7919 + 13) % (USERS - 100);
      return n + 1;
    };
    const warm = () => load('warm-up', api, token, () => '/auth/me');
    await warm();
    const json = await load('bare GET /json (the machine)', bare, undefined, () => '/json');
    const me = await load('GET /auth/me', api, token, () => '/auth/me');
    const eq = await load('GET /scim/v2/Users?filter=userName eq', api, rawToken, () => {
      n = (n * 7919 + 13) % USERS;
      return `/scim/v2/Users?filter=${encodeURIComponent(`userName eq "person${n + 1}@${domain}"`)}`;
    });
    n = 0;
    const page = await load('GET /scim/v2/Users page of 100 by startIndex', api, rawToken, () => {
      return `/scim/v2/Users?startIndex=${pages()}&count=100`;
    });
    n = 0;
    const floor = await load('floor: bare Express + pg, the same pages', bare, undefined, () => floorPath(pages()));
    console.log(`\n${CONNECTIONS} connections, ${DURATION} s each\n`);
    console.log(
      'scenario'.padEnd(52),
      'req/s'.padStart(8),
      'p99 ms'.padStart(8),
      'x me p99'.padStart(9),
      'errors'.padStart(7),
      ' target',
    );
    for (const r of [json, me, eq, page, floor]) {
      const ratio = r.p99 / me.p99;
      const verdict =
        r === eq || r === page ? (ratio <= TARGET && r.errors === 0 ? `<= ${TARGET}x PASS` : `<= ${TARGET}x FAIL`) : '';
      console.log(
        r.name.padEnd(52),
        r.rate.toFixed(0).padStart(8),
        r.p99.toFixed(1).padStart(8),
        ratio.toFixed(2).padStart(9),
        String(r.errors).padStart(7),
        '',
        verdict,
      );
    }
    const floorRatio = floor.p99 / me.p99;
    console.log(`\nfloor's answer the same as the API's (page at ${sample}): ${same ? 'yes' : 'NO'}`);
    console.log(
      `floor p99 ${floor.p99.toFixed(1)} ms = ${floorRatio.toFixed(2)}x GET /auth/me p99 (${me.p99.toFixed(1)} ms); ` +
        `API page p99 ${page.p99.toFixed(1)} ms = ${(page.p99 / floor.p99).toFixed(2)}x the floor's`,
    );
    if (floorRatio > TARGET)
      console.log(
        `the floor itself is above ${TARGET}x GET /auth/me (${floorRatio.toFixed(2)}x): a page of 100 within ${TARGET}x ` +
          'is beyond what any implementation reaches on this machine',
      );
  } finally {
    for (const c of [child, bareChild]) {
      if (!c || c.exitCode !== null) continue;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await queryRows(ADMIN_URL, `drop database if exists "${name}" with (force)`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
