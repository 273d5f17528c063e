// Boots the service from a parsed Config: database and migrations, seeds, the HTTP server, and an orderly
// close (drain, stop accepting, let in-flight requests finish, then close the mailer and the pool). Used
// by server/index.ts, the tests and the benchmark alike.
import http from 'node:http';
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Config } from './platform/config.js';
import type { AppDeps } from './platform/context.js';
import type { Logger } from './platform/logger.js';
import { createApp } from './app.js';
import { errorBody, httpError, type ApiError } from './platform/errors.js';
import { databaseKind } from '../db/index.js';
import { createDeps } from './deps.js';
import { PeriodicTimers } from './platform/periodic.js';
import { periodicTasks } from './tasks.js';
import { webhookQueueEnabled } from './platform/queue-mode.js';

/**
 * Connections the kernel queues for accept() (capped by net.core.somaxconn). Node's default, 511, drops the
 * SYNs of a burst past it, and each dropped client retries only after a second: 1,000 streams opened at once
 * waited a median 1 s for their first byte before this (docs/performance.md, "Streaming generation").
 */
const LISTEN_BACKLOG = 4096;

export interface RunningServer {
  /** The URL this machine reaches the server at (loopback when it listens on every interface). */
  url: string;
  /** The address actually listened on, as a URL (server.address()): `http://0.0.0.0:3000`, `http://[::1]:3000`. */
  address: string;
  deps: AppDeps;
  /**
   * Shuts down in order (what SIGTERM does). First the drain: for SHUTDOWN_DRAIN_DELAY_MS `GET /health`
   * answers 503 `draining` while every other request is served as usual, so a load balancer takes the
   * instance out before it stops listening. Then no new connections, in-flight requests finish (within
   * SHUTDOWN_TIMEOUT_MS), and the mailer, Redis and the pool close. `drain: false` skips the delay, also
   * when called again during it (a second signal). Every call answers the same shutdown.
   */
  close(opts?: { drain?: boolean }): Promise<void>;
}

/**
 * Node's limits on slow clients, from the settings: the headers within HTTP_HEADERS_TIMEOUT_MS, the whole
 * request within HTTP_REQUEST_TIMEOUT_MS (both counted from its first byte, or from the connection's
 * start; answered 408 by answerClientErrors), and an idle keep-alive connection closed after
 * HTTP_KEEP_ALIVE_TIMEOUT_MS. Node checks for expired requests every connectionsCheckingInterval
 * (default 30 s, which would let a 30 s limit run to 60): here at most 1 s.
 */
function serverOptions(config: Config): http.ServerOptions {
  return {
    headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: Math.min(1_000, Math.ceil(config.HTTP_HEADERS_TIMEOUT_MS / 4)),
  };
}

/** The answer to a request Node refuses before Express sees it. */
function clientErrorAnswer(err: NodeJS.ErrnoException, config: Config): ApiError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW': {
      const message = 'Request headers are too large (limit 16 KiB).';
      return { status: 431, code: 'REQUEST_HEADER_FIELDS_TOO_LARGE', message };
    }
    case 'ERR_HTTP_REQUEST_TIMEOUT': {
      const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;
      const headers = seconds(config.HTTP_HEADERS_TIMEOUT_MS);
      const whole = seconds(config.HTTP_REQUEST_TIMEOUT_MS);
      return httpError(408, `The request came too slowly: headers are due in ${headers}, all of it in ${whole}.`);
    }
    default:
      return httpError(400, 'Malformed HTTP request.');
  }
}

/** Node's socket of an HTTP connection, with the answer it is writing (what Node's own handler checks). */
type HttpSocket = Duplex & { _httpMessage?: http.ServerResponse | null };

/**
 * Answers malformed requests that never reach Express (headers over Node's 16 KiB limit, broken HTTP) and
 * requests that did not arrive in time (408), with the same JSON error body as everything else. A socket
 * whose answer has already begun (or that cannot be written) is only closed: a second answer would be
 * read as the answer to the client's next request.
 */
function answerClientErrors(server: http.Server, config: Config, logger: Logger) {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: HttpSocket) => {
    if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const requestId = crypto.randomUUID();
    const api = clientErrorAnswer(err, config);
    logger.info({ requestId, status: api.status, code: api.code, reason: err.code }, 'request refused before routing');
    const body = JSON.stringify(errorBody(api, requestId));
    const answer =
      `HTTP/1.1 ${api.status} ${http.STATUS_CODES[api.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`;
    // A request out of time has nothing more to say: the socket goes once the answer is out, rather than
    // when the client closes its side.
    if (api.status === 408) socket.end(answer, () => socket.destroy());
    else socket.end(answer);
  });
}

export async function startServer(config: Config, logger: Logger): Promise<RunningServer> {
  const deps = await createDeps(config, logger);
  const app = createApp(deps);
  deps.webhooks.startTimers();
  // With the queues off there is no worker: the API runs the periodic tasks itself.
  const periodic =
    webhookQueueEnabled(config) || !config.PERIODIC_TASKS_ENABLED
      ? undefined
      : new PeriodicTimers(periodicTasks(deps), logger);
  periodic?.start();
  let closing: Promise<void> | undefined;
  // From the drain on, every answer ends its keep-alive connection, those of requests already running
  // included: a client's next request opens a new one, which the load balancer sends to an instance that
  // stays, and no idle connection is left to hold the close up.
  const unanswered = new Set<http.ServerResponse>();
  const server = http.createServer(serverOptions(config), (req, res) => {
    if (deps.lifecycle.draining) res.setHeader('Connection', 'close');
    else unanswered.add(res);
    const end = deps.inFlight.begin();
    res.once('close', () => {
      unanswered.delete(res);
      end();
    });
    app(req, res);
  });
  answerClientErrors(server, config, logger);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: config.PORT, host: config.HOST, backlog: LISTEN_BACKLOG }, () => resolve());
  });
  const listened = server.address() as AddressInfo;
  const { port } = listened;
  const address = urlOf(listened.address, port);
  logger.info({ port, address, database: databaseKind(config), emailProvider: config.EMAIL_PROVIDER }, 'listening');

  let endDrain: (() => void) | undefined;
  const close = ({ drain = true }: { drain?: boolean } = {}) => {
    if (!drain) endDrain?.();
    return (closing ??= (async () => {
      deps.lifecycle.draining = true;
      for (const res of unanswered) if (!res.headersSent) res.setHeader('Connection', 'close');
      if (drain && config.SHUTDOWN_DRAIN_DELAY_MS > 0) {
        const drainDelayMs = config.SHUTDOWN_DRAIN_DELAY_MS;
        logger.info({ drainDelayMs }, 'draining: /health answers 503, requests are still served');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, config.SHUTDOWN_DRAIN_DELAY_MS);
          endDrain = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      const deadline = Date.now() + config.SHUTDOWN_TIMEOUT_MS;
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), config.SHUTDOWN_TIMEOUT_MS);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      });
      // Connections are closed; a procedure whose client went away may still be running.
      if (!(await deps.inFlight.drained(Math.max(0, deadline - Date.now())))) {
        logger.warn(
          { inFlight: deps.inFlight.size },
          'shutdown: requests still running after SHUTDOWN_TIMEOUT_MS; closing anyway',
        );
      }
      await deps.webhooks.stop();
      await periodic?.stop();
      await deps.imageWork.close();
      await deps.mailer.close();
      await deps.redis?.close();
      await deps.db.destroy();
    })());
  };

  return { url: urlOf(reachableHost(listened), port), address, deps, close };
}

/** `http://host:port`, an IPv6 address in brackets. */
const urlOf = (host: string, port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/** Where this machine reaches the server: the address listened on, or loopback for every interface. */
const reachableHost = ({ address, family }: AddressInfo) =>
  address === '0.0.0.0' ? '127.0.0.1' : address === '::' ? (family === 'IPv6' ? '::1' : '127.0.0.1') : address;
