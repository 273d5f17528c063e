// Random tokens and their stored digests. Raw tokens go to the client once; the database keeps digests.
import crypto from 'node:crypto';

/** 256 bits of randomness, URL-safe. */
export const randomToken = (bytes = 32) => crypto.randomBytes(bytes).toString('base64url');

export const sha256Hex = (value: string) => crypto.createHash('sha256').update(value).digest('hex');

export const hmacSha256Hex = (key: string, value: string) =>
  crypto.createHmac('sha256', key).update(value).digest('hex');
