// pino logger. Request lines carry method, path, status and ids only: headers and bodies are never
// serialised, and query values whose names look secret are masked, as is a tRPC query's `input` (the whole
// input of a call as JSON: a login sent as a GET carries its password there), so tokens, passwords,
// cookies and keys cannot reach a log line. `redact` is a second line of defence for ad-hoc objects.
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

export type { Logger };

const SECRET_KEY = /pass|token|secret|key|auth|cookie|signature|code|session|credential/i;
/** Parameters whose value may hold anything, secrets included. */
const OPAQUE_KEY = /^input$/i;

/** Path plus query string with the values of secret-looking parameters masked. */
export function safeUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const key of new Set(params.keys())) {
    if (SECRET_KEY.test(key) || OPAQUE_KEY.test(key)) params.set(key, '[REDACTED]');
  }
  const query = params.toString();
  return query ? `${url.slice(0, q)}?${query}` : url.slice(0, q);
}

const REDACT_PATHS = [
  'password', 'newPassword', 'token', 'accessToken', 'refreshToken', 'secret', 'apiKey', 'rawKey', 'authorization',
  '*.password', '*.newPassword', '*.token', '*.accessToken', '*.refreshToken', '*.secret', '*.apiKey', '*.rawKey',
  '*.authorization', '*.cookie', 'req.headers', 'res.headers',
];

export function createLogger(config: Pick<Config, 'LOG_LEVEL' | 'NODE_ENV'>, destination?: DestinationStream): Logger {
  return pino(
    {
      level: config.LOG_LEVEL,
      base: { service: 'workspace-saas-api' },
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      serializers: { err: pino.stdSerializers.err },
    },
    destination ?? pino.destination({ sync: false }),
  );
}

/**
 * Ends the process once the logger has written what it holds: its destination writes asynchronously, and
 * process.exit() while a write is under way drops the last lines (a shutdown's last words). Pino's flush
 * does not wait for that write; ending the destination does. One that cannot write holds the exit for two
 * seconds at most. Never settles: awaiting it stops the caller where process.exit() would have.
 */
export function exitAfterLogs(logger: Logger, code: number): Promise<never> {
  const exit = () => process.exit(code);
  setTimeout(exit, 2_000);
  const destination = (logger as unknown as Record<symbol, Partial<EndableDestination> | undefined>)[pino.symbols.streamSym];
  if (destination?.end && destination.once) {
    destination.once('close', exit);
    destination.end();
  } else {
    logger.flush(exit);
  }
  return new Promise<never>(() => undefined);
}

/** What pino.destination() makes (a SonicBoom): ending it writes what it holds, then emits 'close'. */
interface EndableDestination {
  end(): void;
  once(event: 'close', listener: () => void): void;
}
