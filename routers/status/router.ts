// Public status checks: search and security. They describe settings, never a secret.
import { z } from 'zod';
import { PASSWORD_MAX_BYTES, PASSWORD_MIN_CHARACTERS } from '../../server/platform/security/passwords.js';
import { publicProcedure, router } from '../../server/platform/trpc.js';

const tags = ['Status'];

export const statusRouter = router({
  search: publicProcedure
    .meta({
      rateLimit: false,
      openapi: {
        method: 'GET',
        path: '/search/status',
        description: 'Which search engine serves GET /search and what it covers. Never rate-limited.',
        tags,
        protect: false,
        summary: 'Search engine and what it covers',
      },
    })
    .input(z.void())
    .output(z.object({ enabled: z.boolean(), engine: z.string(), sources: z.array(z.string()) }))
    .query(() => ({
      enabled: true,
      engine: 'postgres-full-text',
      sources: ['ai_templates', 'ai_generations', 'members'],
    })),

  security: publicProcedure
    .meta({
      rateLimit: false,
      openapi: {
        method: 'GET',
        path: '/security/status',
        description:
          'The security settings a client may adapt to: rate limiting and its tiers, proxy trust, captcha, the password policy and token lifetimes. No secret is in it.',
        tags,
        protect: false,
        summary: 'Rate limiting, proxy trust, captcha, password policy, token lifetimes',
      },
    })
    .input(z.void())
    .output(
      z.object({
        rateLimiting: z.object({
          enabled: z.boolean(),
          windowSeconds: z.number().int(),
          store: z.enum(['memory', 'redis']),
          tiers: z.record(z.string(), z.number().int()),
        }),
        trustProxy: z.string(),
        captcha: z.object({ configured: z.boolean() }),
        passwordPolicy: z.object({
          minCharacters: z.number().int(),
          maxBytes: z.number().int(),
          requiresLetter: z.boolean(),
          requiresNumber: z.boolean(),
        }),
        tokens: z.object({
          accessTokenTtlSeconds: z.number().int(),
          refreshTokenTtlSeconds: z.number().int(),
          refreshRotation: z.boolean(),
          reuseGraceSeconds: z.number().int(),
        }),
      }),
    )
    .query(({ ctx: { config } }) => ({
      rateLimiting: {
        enabled: config.RATE_LIMIT_ENABLED,
        windowSeconds: config.RATE_LIMIT_WINDOW_SECONDS,
        store: config.REDIS_URL ? ('redis' as const) : ('memory' as const),
        tiers: {
          default: config.RATE_LIMIT_MAX_REQUESTS,
          auth: config.RATE_LIMIT_AUTH_MAX_REQUESTS,
          contact: config.RATE_LIMIT_MAX_REQUESTS,
          upload: config.RATE_LIMIT_UPLOAD_MAX_REQUESTS,
          publicApi: config.RATE_LIMIT_PUBLIC_API_MAX_REQUESTS,
          webhook: config.RATE_LIMIT_WEBHOOK_MAX_REQUESTS,
        },
      },
      trustProxy: Array.isArray(config.TRUST_PROXY)
        ? `addresses: ${config.TRUST_PROXY.join(', ')}`
        : typeof config.TRUST_PROXY === 'number'
          ? `${config.TRUST_PROXY} hop(s)`
          : String(config.TRUST_PROXY),
      captcha: { configured: false },
      passwordPolicy: {
        minCharacters: PASSWORD_MIN_CHARACTERS,
        maxBytes: PASSWORD_MAX_BYTES,
        requiresLetter: true,
        requiresNumber: true,
      },
      tokens: {
        accessTokenTtlSeconds: config.JWT_ACCESS_TTL,
        refreshTokenTtlSeconds: config.JWT_REFRESH_TTL,
        refreshRotation: true,
        reuseGraceSeconds: config.REFRESH_TOKEN_REUSE_GRACE_SECONDS,
      },
    })),
});
