// Inputs and outputs of the single sign-on routes: verified domains.
import { z } from 'zod';
import { DOMAIN_STATUSES } from '../../db/schema.js';

const isoDate = z.iso.datetime({ offset: true });
export const workspaceIdInput = z.object({ workspaceId: z.uuid() });
export const domainIdInput = workspaceIdInput.extend({ domainId: z.uuid() });

/** A DNS name of at least two labels: letters, digits and hyphens (IDNs in their punycode form). */
const domainName = z
  .string()
  .trim()
  .toLowerCase()
  .max(253)
  .regex(/^(?=.{1,253}\.?$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?\.?$/, {
    error: 'Enter a domain name such as example.com (international names in their xn-- form).',
  })
  .meta({ examples: ['example.com'] });

export const addDomainInput = workspaceIdInput.extend({ domain: domainName });

export const domainOutput = z
  .object({
    id: z.uuid(),
    domain: z.string().meta({ maxLength: 253, examples: ['example.com'] }),
    status: z.enum(DOMAIN_STATUSES),
    verification: z
      .object({
        type: z.literal('TXT'),
        name: z.string().meta({ maxLength: 300, examples: ['_saas-verification.example.com'] }),
        value: z.string().meta({ maxLength: 100 }),
      })
      .meta({ description: 'The DNS record that proves the workspace controls the domain.' }),
    createdAt: isoDate,
    verifiedAt: isoDate.nullable(),
  })
  .meta({ id: 'VerifiedDomain' });

export const domainListOutput = z.object({ items: z.array(domainOutput) });
