// The loopback receiver of the webhook benchmark (bench/run.ts starts it as a child process): a plain
// node:http server that reads each POST and answers 200 "ok", the least a real endpoint could do. It is
// not Express on purpose: the receiver is the other party's machine, and its cost is not the worker's.
// Settings from the environment: PORT, HOST (default 127.0.0.1).
import http from 'node:http';

const port = Number(process.env.PORT ?? 3101);
const host = process.env.HOST ?? '127.0.0.1';

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/ready') return void res.end('ok');
  if (req.method !== 'POST') {
    res.statusCode = 405;
    return void res.end();
  }
  req.resume();
  req.on('end', () => res.end('ok'));
});
server.keepAliveTimeout = 60_000;

server.listen(port, host, () => console.log(`receiver on http://${host}:${port}`));

const shutdown = () => server.close(() => process.exit(0));
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
