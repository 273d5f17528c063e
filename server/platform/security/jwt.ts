// Access tokens: HS256 JWTs with sub, sid (the session), iat, exp, iss, aud and typ "access". The algorithm
// is pinned on verification, so alg "none", HS512 or an RS/HS confusion never passes.
import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { Config } from '../config.js';
import { isUuid } from '../validation.js';

type JwtConfig = Pick<Config, 'JWT_ACCESS_SECRET' | 'JWT_ACCESS_TTL' | 'JWT_ISSUER' | 'JWT_AUDIENCE'>;

/** Longer bearer values are refused before any parsing. */
const MAX_TOKEN_LENGTH = 4096;

/**
 * The secret as a KeyObject, built once per secret. Given a string, jsonwebtoken first tries to parse it
 * as a public key on every call (a thrown and caught error each time): about a fifth of a request's CPU.
 */
const keys = new Map<string, crypto.KeyObject>();
function secretKey(secret: string): crypto.KeyObject {
  let key = keys.get(secret);
  if (!key) {
    key = crypto.createSecretKey(Buffer.from(secret, 'utf8'));
    keys.set(secret, key);
  }
  return key;
}

export interface AccessClaims {
  userId: string;
  /** The session (refresh-token family) the token was issued for; authentication checks it is not ended. */
  sessionId: string;
  /** Seconds since the epoch. */
  issuedAt: number;
}

/** An access token of the user's session `sessionId` (a token without one is refused by verifyAccessToken). */
export function signAccessToken(
  config: JwtConfig,
  userId: string,
  sessionId?: string,
): { token: string; expiresIn: number } {
  // jti makes every token unique, even two issued to one user within the same second.
  const token = jwt.sign(
    { typ: 'access', ...(sessionId ? { sid: sessionId } : {}) },
    secretKey(config.JWT_ACCESS_SECRET),
    {
      jwtid: crypto.randomUUID(),
      algorithm: 'HS256',
      expiresIn: config.JWT_ACCESS_TTL,
      issuer: config.JWT_ISSUER,
      audience: config.JWT_AUDIENCE,
      subject: userId,
    },
  );
  return { token, expiresIn: config.JWT_ACCESS_TTL };
}

/**
 * Tokens already verified, with their expiry: the rate limiter and authentication both read the token of
 * a request, and a client sends the same token many times. Bounded; expiry is checked on every hit.
 */
const verifiedBySecret = new Map<string, Map<string, AccessClaims & { exp: number }>>();
const VERIFIED_MAX = 10_000;

/** The claims of a valid access token, or null for anything else (bad signature, expired, wrong type...). */
export function verifyAccessToken(config: JwtConfig, token: string): AccessClaims | null {
  let verified = verifiedBySecret.get(config.JWT_ACCESS_SECRET);
  if (!verified) {
    verified = new Map();
    verifiedBySecret.set(config.JWT_ACCESS_SECRET, verified);
  }
  const hit = verified.get(token);
  if (hit) {
    if (hit.exp * 1000 > Date.now()) return { userId: hit.userId, sessionId: hit.sessionId, issuedAt: hit.issuedAt };
    verified.delete(token);
    return null;
  }
  const claims = verifyUncached(config, token);
  if (claims) {
    if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value!);
    verified.set(token, claims);
  }
  return claims && { userId: claims.userId, sessionId: claims.sessionId, issuedAt: claims.issuedAt };
}

/**
 * A compact JWS: three base64url parts. Anything else (a SCIM token, an API key) is refused before the
 * verifier, which would build and throw an error for it on every request.
 */
const JWS_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

function verifyUncached(config: JwtConfig, token: string): (AccessClaims & { exp: number }) | null {
  if (token.length > MAX_TOKEN_LENGTH || !JWS_SHAPE.test(token)) return null;
  try {
    const payload = jwt.verify(token, secretKey(config.JWT_ACCESS_SECRET), {
      algorithms: ['HS256'],
      issuer: config.JWT_ISSUER,
      audience: config.JWT_AUDIENCE,
    });
    if (typeof payload !== 'object' || payload.typ !== 'access') return null;
    if (
      typeof payload.sub !== 'string' ||
      !isUuid(payload.sub) ||
      // Every token names its session: one issued before sessions existed is refused (the client refreshes).
      typeof payload.sid !== 'string' ||
      !isUuid(payload.sid) ||
      typeof payload.iat !== 'number' ||
      typeof payload.exp !== 'number'
    )
      return null;
    return { userId: payload.sub, sessionId: payload.sid, issuedAt: payload.iat, exp: payload.exp };
  } catch {
    return null;
  }
}

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}
