// Inputs and outputs of the single sign-on routes: verified domains.
import { z } from 'zod';
import { DOMAIN_STATUSES, SSO_CONNECTION_STATUSES, SSO_CONNECTION_TYPES, SSO_DEFAULT_ROLES } from '../../db/schema.js';

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

// ---------------------------------------------------------------------------------------------------
// Connections

export const connectionIdInput = workspaceIdInput.extend({ connectionId: z.uuid() });

const name = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .meta({ examples: ['Okta'] });
const httpsUrl = z
  .url({ protocol: /^https?$/, error: 'Expected an http(s) URL.' })
  .max(2048)
  .meta({ examples: ['https://idp.example.com/sso/saml'] });
/** A PEM certificate, or its base64 body alone. */
const certificate = z.string().trim().min(100).max(20_000).meta({
  description: "The identity provider's signing certificate: PEM, or its base64 body.",
});

export const createConnectionInput = workspaceIdInput
  .extend({
    type: z.enum(SSO_CONNECTION_TYPES),
    name,
    metadataXml: z.string().max(200_000).optional().meta({ description: "SAML: the identity provider's metadata." }),
    idpEntityId: z.string().trim().min(1).max(1024).optional(),
    idpSsoUrl: httpsUrl.optional(),
    idpCertificate: certificate.optional(),
    issuer: httpsUrl.optional().meta({ description: 'OIDC: the issuer (its discovery document is read).' }),
    clientId: z.string().trim().min(1).max(512).optional(),
    clientSecret: z.string().min(1).max(1024).optional().meta({ description: 'OIDC; never answered.' }),
  })
  .superRefine((v, ctx) => {
    const need = (field: keyof typeof v, message: string) => {
      if (v[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message });
    };
    if (v.type === 'OIDC') {
      need('issuer', 'An OIDC connection needs its issuer.');
      need('clientId', 'An OIDC connection needs a client id.');
      need('clientSecret', 'An OIDC connection needs a client secret.');
    } else if (v.metadataXml === undefined) {
      need('idpEntityId', 'A SAML connection needs metadataXml, or idpEntityId, idpSsoUrl and idpCertificate.');
      need('idpSsoUrl', 'A SAML connection needs metadataXml, or idpEntityId, idpSsoUrl and idpCertificate.');
      need('idpCertificate', 'A SAML connection needs metadataXml, or idpEntityId, idpSsoUrl and idpCertificate.');
    }
  });

export const updateConnectionInput = connectionIdInput.extend({
  name: name.optional(),
  defaultRole: z.enum(SSO_DEFAULT_ROLES).optional(),
  status: z.enum(SSO_CONNECTION_STATUSES).optional(),
  allowIdpInitiated: z.boolean().optional().meta({
    description: 'Accept SAML answers no request of ours asked for (open to login CSRF: off by default).',
  }),
  idpSsoUrl: httpsUrl.optional(),
  idpCertificate: certificate.optional().meta({ description: 'SAML: replaces the current certificate.' }),
  nextIdpCertificate: certificate.nullable().optional().meta({
    description: 'SAML roll-over: a second certificate accepted beside the current one; null removes it.',
  }),
  clientSecret: z.string().min(1).max(1024).optional().meta({ description: 'OIDC; never answered.' }),
});

export const connectionOutput = z
  .object({
    id: z.uuid(),
    type: z.enum(SSO_CONNECTION_TYPES),
    name: z.string().meta({ maxLength: 100 }),
    status: z.enum(SSO_CONNECTION_STATUSES),
    defaultRole: z.enum(SSO_DEFAULT_ROLES),
    allowIdpInitiated: z.boolean(),
    createdAt: isoDate,
    sp: z
      .object({
        entityId: z.string().meta({ maxLength: 2200 }).optional(),
        acsUrl: z.string().meta({ maxLength: 2200 }).optional(),
        metadataUrl: z.string().meta({ maxLength: 2200 }).optional(),
        redirectUri: z.string().meta({ maxLength: 2200 }).optional(),
      })
      .meta({
        description: 'What to register at the identity provider: SAML entityId, acsUrl, metadataUrl; OIDC redirectUri.',
      }),
    saml: z
      .object({
        idpEntityId: z.string().meta({ maxLength: 1024 }),
        idpSsoUrl: z.string().meta({ maxLength: 2048 }),
        certificates: z.array(
          z.object({
            fingerprint: z.string().meta({ maxLength: 100, description: 'SHA-256, hex pairs.' }),
            notAfter: isoDate,
          }),
        ),
      })
      .nullable(),
    oidc: z
      .object({ issuer: z.string().meta({ maxLength: 2048 }), clientId: z.string().meta({ maxLength: 512 }) })
      .nullable(),
  })
  .meta({ id: 'SsoConnection' });

export const connectionListOutput = z.object({ items: z.array(connectionOutput) });
