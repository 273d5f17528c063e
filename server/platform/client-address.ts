// The client's address as every layer reads it (the request log, the audit log, sessions, the limiter).
import { isIP } from 'node:net';
import type { Request } from 'express';

/**
 * The client's address: req.ip (the X-Forwarded-For entry TRUST_PROXY names) when it parses as an IP
 * address, else the connection's peer; never header text as written (`X-Forwarded-For: wsk_...` from a
 * client that no proxy stands before). Undefined when neither parses.
 */
export function clientAddress(req: Request): string | undefined {
  if (req.ip && isIP(req.ip)) return req.ip;
  const peer = req.socket.remoteAddress;
  return peer && isIP(peer) ? peer : undefined;
}
