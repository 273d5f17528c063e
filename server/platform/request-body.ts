// What is decided about a request body from its headers, before a parser reads a byte of it: the
// Content-Encoding must be one the route decodes (415), and a Content-Length over the route's limit is a
// 413 at once. An answer given while the body has not arrived in full closes the connection, so the
// server never reads a body it has already answered (Node would otherwise read it all to keep the
// connection alive).
import type { Request, RequestHandler, Response } from 'express';
import { AppError } from './errors.js';

export const MiB = 1024 * 1024;

/** JSON bodies (REST and /trpc) and provider webhooks: at most 1 MiB, decoded. */
export const JSON_BODY_LIMIT_BYTES = 1 * MiB;

/** The codings the body parsers decode (each alone, not stacked): body-parser's, minus zstd (Node 22 only). */
export const DECODED_ENCODINGS: readonly string[] = ['gzip', 'deflate', 'br'];

/** Whether the request says it has a body (as body-parser decides: a length, even 0, or chunks). */
const declaresBody = (req: Request) =>
  req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;

/**
 * 415 UNSUPPORTED_MEDIA_TYPE for a body whose Content-Encoding is neither `identity` nor one of `decoded`
 * (an empty list: the body must be sent as is).
 */
export function refuseContentEncoding(decoded: readonly string[]): RequestHandler {
  const list = decoded.join(', ').replace(/, ([^,]+)$/, ' or $1');
  const accepted = decoded.length ? `send it as is or compressed with ${list}` : 'send it as is';
  return (req, _res, next) => {
    const encoding = req.headers['content-encoding']?.trim().toLowerCase();
    if (!encoding || encoding === 'identity' || !declaresBody(req) || decoded.includes(encoding)) return next();
    const named = JSON.stringify(encoding.slice(0, 40));
    next(new AppError('UNSUPPORTED_MEDIA_TYPE', `Content-Encoding ${named} is not accepted here: ${accepted}.`));
  };
}

/**
 * 413 PAYLOAD_TOO_LARGE when Content-Length declares more than `limitBytes`, answered before any byte of
 * the body is read (the connection is then closed: see closeUnreadBody). A body without a length (chunked)
 * is held to the limit by its parser as it arrives.
 */
export function refuseDeclaredLength(limitBytes: number, message: string): RequestHandler {
  return (req, _res, next) => {
    const declared = req.headers['content-length'];
    // Node's parser has already refused a Content-Length that is not digits.
    const over = declared !== undefined && Number(declared) > limitBytes;
    next(over ? new AppError('PAYLOAD_TOO_LARGE', message) : undefined);
  };
}

/** Both refusals, one after the other. */
const both =
  (first: RequestHandler, second: RequestHandler): RequestHandler =>
  (req, res, next) =>
    first(req, res, (err?: unknown) => (err ? next(err) : second(req, res, next)));

/** The refusals of a JSON route (REST, /trpc) and of a provider webhook: gzip, deflate or br, 1 MiB declared. */
export const refuseJsonBodyHeaders = both(
  refuseContentEncoding(DECODED_ENCODINGS),
  refuseDeclaredLength(JSON_BODY_LIMIT_BYTES, 'Request body is too large (limit 1 MiB).'),
);

/** What zlib and brotli decompressors tell of the input they took: bytes consumed, not merely written. */
interface Decoder extends NodeJS.WritableStream {
  bytesWritten: number;
}

const TRAILING_BYTES =
  'The request body is not valid gzip, deflate or br data, as its Content-Encoding says it is: bytes follow ' +
  'the end of the compressed data.';

/**
 * `parser` (body-parser's json or raw) with one more refusal: a compressed body with bytes after the end
 * of its compressed data (`garbage`, a second deflate or br stream) is a 400, like a body that does not
 * decode. body-parser stops at the decoder's end and drops the rest. The decoder's `bytesWritten` is the
 * input it consumed; every byte of the request is counted here before it is piped on, so a difference is
 * trailing data. (gzip's decoder reads on past a member's end itself: a second member is decoded, as
 * RFC 1952 has it; other bytes fail to decode, and the zero padding it skips is left out of
 * `bytesWritten`, so it is refused here.)
 */
export function refuseTrailingBytes(parser: RequestHandler): RequestHandler {
  return (req, res, next) => {
    const encoding = req.headers['content-encoding']?.trim().toLowerCase();
    if (!encoding || encoding === 'identity' || !declaresBody(req)) return parser(req, res, next);
    let received = 0;
    let decoder: Decoder | undefined;
    const count = (chunk: Buffer) => {
      received += chunk.length;
    };
    const pipe = req.pipe.bind(req);
    req.pipe = <T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }) => {
      // Before pipe's own listener: every chunk is counted before the decoder sees it.
      req.on('data', count);
      decoder = destination as unknown as Decoder;
      return pipe(destination, options);
    };
    parser(req, res, (err?: unknown) => {
      req.pipe = pipe;
      req.off('data', count);
      if (err || !decoder) return next(err);
      // The decoder ends when the body does, or when it is handed bytes past the end of its data: either
      // way, every byte it did not take is trailing data.
      next(received > decoder.bytesWritten ? new AppError('BAD_REQUEST', TRAILING_BYTES) : undefined);
    });
  };
}

/** Lingering close of an answered request whose body is still coming (see closeUnreadBody). */
const LINGER = { idleMs: 500, maxMs: 5_000, maxBytes: 16 * MiB } as const;

/**
 * Sends `Connection: close` with an answer written before the request's body has arrived in full (a
 * refusal from the headers, a 401 before an upload is read): Node would otherwise read and discard the
 * rest of the body, however long, to reuse the connection. The connection is not cut at once, though: a
 * client still sending its body would see a reset (EPIPE) instead of the answer, as fetch does. Like a web
 * server's lingering close, the rest is read and discarded until it ends, and the connection closed then,
 * or as soon as the client pauses for 0.5 s, after 5 s or after 16 MiB. Requests without a body are left
 * alone.
 */
export const closeUnreadBody: RequestHandler = (req, res, next) => {
  if (declaresBody(req) && req.headers['content-length'] !== '0') {
    const writeHead = res.writeHead.bind(res);
    res.writeHead = function (this: Response, ...args: unknown[]) {
      if (!req.complete && !this.headersSent) {
        this.setHeader('Connection', 'close');
        lingerBeforeClosing(req);
      }
      return (writeHead as (...a: unknown[]) => Response)(...args);
    } as Response['writeHead'];
  }
  next();
};

/** Replaces the close Node makes after a `Connection: close` answer by a lingering one (LINGER). */
function lingerBeforeClosing(req: Request) {
  const socket = req.socket;
  const destroySoon = socket.destroySoon.bind(socket);
  socket.destroySoon = () => {
    if (req.complete) return destroySoon();
    let received = 0;
    let idle: NodeJS.Timeout | undefined;
    const close = () => {
      clearTimeout(idle);
      clearTimeout(deadline);
      socket.off('data', onData);
      // The body has ended: close as Node would have. Otherwise stop reading at once.
      if (req.complete) destroySoon();
      else socket.destroy();
    };
    const restartIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(close, LINGER.idleMs);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > LINGER.maxBytes) close();
      else restartIdle();
    };
    const deadline = setTimeout(close, LINGER.maxMs);
    socket.on('data', onData);
    // Node discards the rest of the body (req._dump()) and ends the request when the body has arrived.
    req.once('end', close);
    socket.once('close', () => {
      clearTimeout(idle);
      clearTimeout(deadline);
    });
    restartIdle();
  };
}

/**
 * The longest a URL parameter or header value can be: Node refuses a request whose line and headers pass
 * 16 KiB (431), before any route sees it. The bound the document gives such values of the plain routes.
 */
export const REQUEST_HEAD_MAX_BYTES = 16 * 1024;
