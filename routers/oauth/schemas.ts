// Inputs and outputs of the identity-provider routes (the browser redirects of redirects.ts have no body).
import { z } from 'zod';
import { IDENTITY_PROVIDER_IDS } from '../../db/schema.js';
import { loginOutput, messageOutput } from '../auth/schemas.js';

const isoDate = z.iso.datetime({ offset: true });
const providerId = z.enum(IDENTITY_PROVIDER_IDS);

export const providersOutput = z
  .object({
    items: z.array(
      z.object({
        id: providerId.meta({ description: 'Used in the paths /auth/oauth/{provider}/start and .../link/start.' }),
        name: z.string().meta({ description: 'What the sign-in button says.' }),
      }),
    ),
  })
  .meta({ id: 'IdentityProviders' });

export const exchangeInput = z.object({
  code: z.string({ error: 'Expected the code string of the callback.' }).max(512).meta({
    description: 'The `code` of `APP_URL/auth/callback?code=...`; single use, valid 60 seconds.',
  }),
});
/** The session result, as login answers it. */
export const exchangeOutput = loginOutput;

export const identityOutput = z
  .object({
    id: z.uuid(),
    provider: providerId,
    providerName: z.string(),
    email: z
      .string()
      .nullable()
      .meta({ description: "The address the provider last gave (may differ from the account's)." }),
    emailVerified: z.boolean(),
    createdAt: isoDate,
    lastUsedAt: isoDate.nullable(),
  })
  .meta({ id: 'Identity' });
export const identitiesOutput = z.object({ items: z.array(identityOutput) });

/** Any provider name: one that is unknown or not enabled answers OAUTH_PROVIDER_NOT_ENABLED. */
const providerParam = z.string().max(64);
/** Any text: anything but a path of the web app falls back to /dashboard. */
export const redirectToSchema = z.string().max(2048).optional().meta({
  description: 'A path of the web app to land on afterwards (e.g. /settings/security); anything else: /dashboard.',
});

export const linkStartInput = z.object({
  provider: providerParam,
  redirectTo: redirectToSchema,
  email: z.email().max(254).optional().meta({
    description: 'For `sso` only: the address whose workspace connection to link (its domain decides the connection).',
  }),
});
export const linkStartOutput = z
  .object({
    url: z.string().meta({ description: "The provider's authorization URL: navigate the browser there." }),
  })
  .meta({ id: 'IdentityLinkStart' });

export const unlinkInput = z.object({ identityId: z.uuid() });
export const unlinkOutput = messageOutput;

export type IdentityOutput = z.infer<typeof identityOutput>;
