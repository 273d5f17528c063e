// Credentials this instance has verified, by digest: the rate limiter counts a caller by its credential
// (an API key, a SCIM token, an OAuth grant) only once the credential is known to be real, without a
// lookup, so made-up values are counted by address like any other unauthenticated request. Each domain
// keeps its own set; none holds a credential itself, only its digest and id.
import crypto from 'node:crypto';
import { remember } from './bounded-cache.js';

/** Entries per set: the newest are kept. */
const KNOWN_MAX = 10_000;

export const credentialDigest = (raw: string) => crypto.createHash('sha256').update(raw).digest('hex');

export interface KnownCredentials {
  /** Records that the credential of this digest is `id`'s (made or verified here). */
  remember(digest: string, id: string): void;
  /** The id of a credential verified here before; undefined for any other value. */
  idOf(raw: string): string | undefined;
}

/** A set of known credentials of one kind; values not shaped as `format` are never hashed. */
export function knownCredentials(format: RegExp): KnownCredentials {
  const known = new Map<string, string>();
  return {
    remember: (digest, id) => void remember(known, digest, id, KNOWN_MAX),
    idOf: (raw) => (format.test(raw) ? known.get(credentialDigest(raw)) : undefined),
  };
}
