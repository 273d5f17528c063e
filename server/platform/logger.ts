// pino logger. Request lines carry method, path, status and ids only: headers and bodies are never
// serialised; path segments shaped like a secret are masked, and so are query values whose names look
// secret or whose values are shaped like one, and a tRPC query's `input` (the whole input of a call as
// JSON: a login sent as a GET carries its password there), so tokens, passwords, cookies and keys cannot
// reach a log line. `redact` is a second line of defence for ad-hoc objects. JSON lines, except in
// development at a terminal, where pino-pretty writes them for people.
import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

export type { Logger };

export const REDACTED = '[REDACTED]';

const SECRET_KEY = /pass|pw|token|secret|key|auth|cookie|signature|code|session|credential/i;
/** Parameters whose value may hold anything, secrets included. */
const OPAQUE_KEY = /^input$/i;

/**
 * This service's secrets and what resembles them: API keys (`wsk_`), refresh tokens (`rt_` + base64url),
 * webhook signing secrets (`whsec_` + base64, or base64url for older ones), SCIM tokens (`scim_`), processor keys (`sk_live_`, `sk_test_`), each at the start of the
 * text or after a character that is not a letter or digit; and JWTs (three base64url parts, the first
 * starting `eyJ`, a JSON object).
 */
const PREFIXED_SECRET = /(?:^|[^A-Za-z0-9])(?:wsk_|rt_|whsec_|scim_|sk_live_|sk_test_)[A-Za-z0-9_+/=-]{8,}/;
const JWT = /eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/;
/**
 * A long random token without a prefix (reset and verification links carry 43 base64url characters):
 * 32 or more of them, with upper case, lower case and digits. UUIDs, slugs and versions are not.
 */
const OPAQUE_TOKEN = /^(?=[A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*[a-z])(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{32,}$/;

/** Percent-decoded when it decodes (`+` as a space for query parts); else as written. */
function decoded(text: string, query = false): string {
  const plus = query ? text.replace(/\+/g, ' ') : text;
  try {
    return decodeURIComponent(plus);
  } catch {
    return plus;
  }
}

/** Shorter text holds none of those shapes (the shortest, a JWT, is `eyJ.x.`). */
const SHORTEST_SECRET = 6;

/** Whether a path segment or a query value (as written or decoded) is shaped like a secret. */
export function looksSecret(text: string, query = false): boolean {
  if (text.length < SHORTEST_SECRET) return false;
  const shaped = (t: string) => PREFIXED_SECRET.test(t) || JWT.test(t);
  const plain = text.includes('%') || (query && text.includes('+')) ? decoded(text, query) : text;
  return shaped(plain) || OPAQUE_TOKEN.test(plain) || (plain !== text && shaped(text));
}

/** Every secret shape holds one of these (`_` of a prefix, `.` and `J` of a JWT, a capital, an escape). */
const MAY_HOLD_SECRET = /[_.%A-Z]/;

/** The path with every segment shaped like a secret replaced by `mask`. */
export function safePath(path: string, mask = REDACTED): string {
  if (!MAY_HOLD_SECRET.test(path)) return path;
  return path
    .split('/')
    .map((segment) => (looksSecret(segment) ? mask : segment))
    .join('/');
}

/**
 * Path plus query string, with path segments shaped like a secret masked, and the values of query
 * parameters whose names look secret (or that are shaped like a secret themselves) masked. The rest is
 * kept as the client wrote it.
 */
export function safeUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return safePath(url);
  const pairs = url
    .slice(q + 1)
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const eq = pair.indexOf('=');
      const [key, value] = eq === -1 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1)];
      if (looksSecret(key, true)) return REDACTED;
      const name = decoded(key, true);
      const secret = SECRET_KEY.test(name) || OPAQUE_KEY.test(name) || looksSecret(value, true);
      return secret ? `${key}=${REDACTED}` : pair;
    });
  const path = safePath(url.slice(0, q));
  return pairs.length ? `${path}?${pairs.join('&')}` : path;
}

const REDACT_PATHS = [
  'password',
  'newPassword',
  'token',
  'accessToken',
  'refreshToken',
  'secret',
  'apiKey',
  'rawKey',
  'authorization',
  '*.password',
  '*.newPassword',
  '*.token',
  '*.accessToken',
  '*.refreshToken',
  '*.secret',
  '*.apiKey',
  '*.rawKey',
  '*.authorization',
  '*.cookie',
  'req.headers',
  'res.headers',
];

export function createLogger(config: Pick<Config, 'LOG_LEVEL' | 'NODE_ENV'>, destination?: DestinationStream): Logger {
  return pino(
    {
      level: config.LOG_LEVEL,
      base: { service: 'workspace-saas-api' },
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      serializers: { err: pino.stdSerializers.err },
    },
    destination ?? defaultDestination(config),
  );
}

/** Whether log lines are written for people: in development, when stdout is a terminal. */
export const wantsPrettyLogs = (config: Pick<Config, 'NODE_ENV'>, stdoutIsTerminal = Boolean(process.stdout.isTTY)) =>
  config.NODE_ENV === 'development' && stdoutIsTerminal;

/** stdout: pino-pretty's coloured lines where wantsPrettyLogs, else JSON lines (what log collectors read). */
function defaultDestination(config: Pick<Config, 'NODE_ENV'>): DestinationStream {
  return (wantsPrettyLogs(config) && prettyDestination()) || pino.destination({ sync: false });
}

/**
 * pino-pretty, loaded only when it is used (never in production or under a log collector), in this
 * thread: a transport's worker thread would outlive exitAfterLogs. Undefined if it is not installed
 * (`npm ci --omit=dev` keeps it, as a dependency; a trimmed image may not).
 */
function prettyDestination(): DestinationStream | undefined {
  try {
    const pretty = createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty');
    return pretty.build({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' });
  } catch {
    return undefined;
  }
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
  const destination = (logger as unknown as Record<symbol, Partial<EndableDestination> | undefined>)[
    pino.symbols.streamSym
  ];
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
