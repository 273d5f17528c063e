// The baselines of the benchmark (bench/run.ts starts it as a child process): a bare Express 5 app with
// no middleware but what each route needs.
//   GET  /json    a small JSON object: the ceiling of any JSON route of the API.
//   POST /bcrypt  {password} -> one bcrypt.compare against a hash made at start-up at BCRYPT_COST: the
//                 ceiling of POST /auth/login. 200 when the password matches, 401 otherwise.
// Settings from the environment: PORT, HOST (default 127.0.0.1), BCRYPT_COST (default 12) and
// BENCH_PASSWORD (the password the hash is made of).
import express from 'express';
import bcrypt from 'bcrypt';

const port = Number(process.env.PORT ?? 3100);
const host = process.env.HOST ?? '127.0.0.1';
const cost = Number(process.env.BCRYPT_COST ?? 12);
const password = process.env.BENCH_PASSWORD ?? 'bench-password-1';

const hash = await bcrypt.hash(password, cost);

const app = express();
app.disable('x-powered-by');

app.get('/json', (_req, res) => {
  res.json({ hello: 'world' });
});

app.post('/bcrypt', express.json(), async (req, res) => {
  const candidate: unknown = req.body?.password;
  const ok = typeof candidate === 'string' && (await bcrypt.compare(candidate, hash));
  res.status(ok ? 200 : 401).json({ ok });
});

const server = app.listen(port, host, (err) => {
  if (err) throw err;
  console.log(`bare server on http://${host}:${port} (bcrypt cost ${cost})`);
});

const shutdown = () => server.close(() => process.exit(0));
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
