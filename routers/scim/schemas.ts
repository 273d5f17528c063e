// Inputs and outputs of the SCIM set-up routes: tokens and the mappings of directory groups to roles.
import { z } from 'zod';
import { SCIM_MAPPED_ROLES } from '../../db/schema.js';
import { displayName } from '../../server/platform/validation.js';

const isoDate = z.iso.datetime({ offset: true });
export const workspaceIdInput = z.object({ workspaceId: z.uuid() });
export const tokenIdInput = workspaceIdInput.extend({ tokenId: z.uuid() });
export const createTokenInput = workspaceIdInput.extend({ name: displayName(100) });

export const scimTokenOutput = z
  .object({
    id: z.uuid(),
    name: z.string().meta({ maxLength: 100, examples: ['Okta'] }),
    prefix: z.string().meta({ maxLength: 32, description: 'The first 12 characters of the token, to recognise it.' }),
    createdAt: isoDate,
    lastUsedAt: isoDate.nullable(),
  })
  .meta({ id: 'ScimToken' });
export const createdTokenOutput = scimTokenOutput
  .extend({
    rawToken: z.string().meta({
      maxLength: 64,
      description: 'The bearer token (scim_...) for the directory: shown this once, never again.',
    }),
  })
  .meta({ id: 'ScimTokenWithSecret' });
export const tokenListOutput = z.object({ items: z.array(scimTokenOutput) });

const mapping = z
  .object({
    group: z
      .string()
      .trim()
      .min(1)
      .max(256)
      .meta({
        description: "The directory group's display name, as the directory sends it.",
        examples: ['Engineering'],
      }),
    role: z.enum(SCIM_MAPPED_ROLES),
  })
  .meta({ id: 'ScimRoleMapping' });

export const roleMappingsOutput = z.object({ mappings: z.array(mapping) }).meta({ id: 'ScimRoleMappings' });
export const putRoleMappingsInput = workspaceIdInput.extend({
  mappings: z
    .array(mapping)
    .max(100)
    .refine((m) => new Set(m.map((x) => x.group)).size === m.length, { error: 'Each group once.' }),
});
