// The loopback receiver of the webhook benchmark (bench/run.ts starts it as a child process): it reads
// each HTTP/1.1 request on a kept-alive connection and answers 200 "ok", the least a real endpoint could
// do. It answers straight from `node:net`, without an HTTP server library, on purpose: in production the
// receiver is the other party's machine, and on the benchmark's machine every microsecond it spends is
// taken from the worker being measured (node:http cost about 80 µs a request here, this about a quarter).
// It expects what the worker sends: a Content-Length on every request with a body (no chunked bodies).
// Settings from the environment: PORT, HOST (default 127.0.0.1).
import net from 'node:net';
import { eachRequest } from './http-frames.js';

const port = Number(process.env.PORT ?? 3101);
const host = process.env.HOST ?? '127.0.0.1';

const answer = (status: string, body: string) =>
  Buffer.from(
    `HTTP/1.1 ${status}\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\nKeep-Alive: timeout=60\r\n\r\n${body}`,
    'latin1',
  );
const OK = answer('200 OK', 'ok');
const NOT_ALLOWED = answer('405 Method Not Allowed', '');

const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  eachRequest(socket, (head) =>
    socket.write(head.startsWith('POST ') || head.startsWith('GET /ready ') ? OK : NOT_ALLOWED),
  );
  socket.on('error', () => socket.destroy());
});

server.listen(port, host, () => console.log(`receiver on http://${host}:${port}`));

const shutdown = () => {
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
