// The SCIM resources as directories read them (RFC 7643): the discovery documents, and how a request's
// User or Group is read (Zod), including what directories really send: booleans as strings ("False"),
// attributes this service does not keep (ignored), names with control characters (refused).
import { z } from 'zod';
import { ScimError } from './errors.js';

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const MAX_PAGE = 200;

/** A boolean, or the strings some directories send for one ("True", "False", any case). */
export const scimBoolean = z.union([
  z.boolean(),
  z
    .string()
    .regex(/^(true|false)$/i)
    .transform((s) => s.toLowerCase() === 'true'),
]);

// eslint-disable-next-line no-control-regex
const CONTROL_OR_INVISIBLE = /[\u0000-\u001F\u007F-\u009F\u200B-\u200D\u2060\uFEFF\u202A-\u202E\u2066-\u2069]/;
const text = (max: number) =>
  z
    .string()
    .trim()
    .max(max)
    .refine((s) => !CONTROL_OR_INVISIBLE.test(s), { error: 'No control or invisible characters.' });

export const userResource = z.object({
  userName: text(254).min(1),
  externalId: text(255).nullish(),
  displayName: text(100).nullish(),
  name: z
    .object({ givenName: text(100).nullish(), familyName: text(100).nullish(), formatted: text(200).nullish() })
    .nullish(),
  emails: z
    .array(z.object({ value: text(254), type: z.string().max(50).nullish(), primary: scimBoolean.nullish() }))
    .max(20)
    .nullish(),
  active: scimBoolean.optional(),
});
export type UserResource = z.infer<typeof userResource>;

export const groupResource = z.object({
  displayName: text(256).min(1),
  externalId: text(255).nullish(),
  members: z
    .array(z.object({ value: z.string().max(64), display: z.string().max(300).nullish() }))
    .max(10_000)
    .nullish(),
});
export type GroupResource = z.infer<typeof groupResource>;

/** `body` read as `schema`; what does not fit is a 400 invalidValue naming the attribute. */
export function readResource<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = issue.path.join('.') || 'body';
  throw new ScimError(
    400,
    `${path}: ${issue.message}`,
    body && typeof body === 'object' ? 'invalidValue' : 'invalidSyntax',
  );
}

export const listResponse = <T>(resources: T[], total: number, startIndex: number) => ({
  schemas: [LIST_SCHEMA],
  totalResults: total,
  startIndex,
  itemsPerPage: resources.length,
  Resources: resources,
});

/** startIndex (1-based; below 1 reads as 1) and count (0 to MAX_PAGE; negative reads as 0), RFC 7644 3.4.2.4. */
export function paging(query: Record<string, unknown>): { startIndex: number; count: number } {
  const number = (name: string, fallback: number) => {
    const raw = query[name];
    if (raw === undefined || raw === '') return fallback;
    if (typeof raw !== 'string' || !/^-?\d{1,9}$/.test(raw))
      throw new ScimError(400, `${name} is an integer.`, 'invalidValue');
    return Number(raw);
  };
  const startIndex = Math.max(1, number('startIndex', 1));
  const count = Math.min(MAX_PAGE, Math.max(0, number('count', 100)));
  return { startIndex, count };
}

export function serviceProviderConfig(base: string) {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: `${base}/docs`,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_PAGE },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'Bearer token',
        description: 'A SCIM token of the workspace (scim_...), created by an owner.',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/scim/v2/ServiceProviderConfig` },
  };
}

export function resourceTypes(base: string) {
  const type = (name: string, endpoint: string, schema: string) => ({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
    id: name,
    name,
    endpoint,
    schema,
    meta: { resourceType: 'ResourceType', location: `${base}/scim/v2/ResourceTypes/${name}` },
  });
  return [type('User', '/Users', USER_SCHEMA), type('Group', '/Groups', GROUP_SCHEMA)];
}

const attribute = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
  name,
  type,
  multiValued: false,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...extra,
});

export function schemas(base: string) {
  const schema = (id: string, name: string, attributes: unknown[]) => ({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    id,
    name,
    attributes,
    meta: { resourceType: 'Schema', location: `${base}/scim/v2/Schemas/${id}` },
  });
  return [
    schema(USER_SCHEMA, 'User', [
      attribute('userName', 'string', { required: true, uniqueness: 'server' }),
      attribute('externalId', 'string', { caseExact: true }),
      attribute('displayName', 'string'),
      attribute('name', 'complex', {
        subAttributes: [
          attribute('givenName', 'string'),
          attribute('familyName', 'string'),
          attribute('formatted', 'string'),
        ],
      }),
      attribute('emails', 'complex', {
        multiValued: true,
        subAttributes: [attribute('value', 'string'), attribute('type', 'string'), attribute('primary', 'boolean')],
      }),
      attribute('active', 'boolean'),
      attribute('groups', 'complex', {
        multiValued: true,
        mutability: 'readOnly',
        subAttributes: [
          attribute('value', 'string', { mutability: 'readOnly' }),
          attribute('$ref', 'reference', { mutability: 'readOnly', referenceTypes: ['Group'] }),
          attribute('display', 'string', { mutability: 'readOnly' }),
          attribute('type', 'string', { mutability: 'readOnly', canonicalValues: ['direct'] }),
        ],
      }),
    ]),
    schema(GROUP_SCHEMA, 'Group', [
      attribute('displayName', 'string', { required: true, uniqueness: 'server' }),
      attribute('externalId', 'string', { caseExact: true }),
      attribute('members', 'complex', {
        multiValued: true,
        subAttributes: [
          attribute('value', 'string', { mutability: 'immutable' }),
          attribute('display', 'string', { mutability: 'readOnly' }),
        ],
      }),
    ]),
  ];
}
