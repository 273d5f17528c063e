// PatchOp (RFC 7644 3.5.2) through scim-patch, after reading what directories really send: operation
// names in any case ("Replace"), a `value` object without `path` whose keys may be dotted paths
// ("name.givenName"), booleans as strings ("False"). The patched resource is then read and stored like a
// PUT's.
import { patchBodyValidation, scimPatch, type ScimPatchOperation, type ScimResource } from 'scim-patch';
import { z } from 'zod';
import { ScimError } from './errors.js';
import { PATCH_SCHEMA } from './resources.js';

const patchBody = z.object({
  schemas: z.array(z.string()).max(10).optional(),
  Operations: z
    .array(
      z.object({
        op: z
          .string()
          .max(10)
          .transform((s) => s.toLowerCase())
          .pipe(z.enum(['add', 'remove', 'replace'])),
        path: z.string().max(1000).optional(),
        value: z.unknown().optional(),
      }),
    )
    .min(1)
    .max(1000),
});

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `{ "name.givenName": "Ada" }` as `{ name: { givenName: "Ada" } }`; other keys as they are. */
function expandDotted(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const parts = key.startsWith('urn:') ? [key] : key.split('.');
    let at = out;
    for (const part of parts.slice(0, -1)) {
      const next = at[part];
      const nested = isRecord(next) ? next : {};
      at[part] = nested;
      at = nested;
    }
    at[parts[parts.length - 1]] = v;
  }
  return out;
}

/** `resource` with the operations of a PatchOp `body` applied; a bad body or path is a 400. */
export function applyPatch<T extends object>(resource: T, body: unknown): T {
  const parsed = patchBody.safeParse(body);
  if (!parsed.success) throw new ScimError(400, `Not a PatchOp: ${parsed.error.issues[0].message}`, 'invalidSyntax');
  const operations = parsed.data.Operations.flatMap((o): Array<Record<string, unknown>> => {
    // Entra removes members as { op: "Remove", path: "members", value: [{ value }] }: one removal by value
    // each, as a filter path, since the stored members carry more than `value`.
    // A value that is not there is already removed (a directory retrying), not an error.
    if (o.op === 'remove' && o.path && !o.path.includes('[') && Array.isArray(o.value)) {
      const current: unknown = (resource as Record<string, unknown>)[o.path];
      const present = new Set(Array.isArray(current) ? current.map((m) => (isRecord(m) ? m.value : undefined)) : []);
      return (o.value as unknown[]).flatMap((v) => {
        const id = isRecord(v) && typeof v.value === 'string' ? v.value : undefined;
        if (id === undefined) throw new ScimError(400, 'A removal by value names each value.', 'invalidValue');
        return present.has(id) ? [{ op: 'remove', path: `${o.path}[value eq ${JSON.stringify(id)}]` }] : [];
      });
    }
    const value =
      o.path === undefined && o.value && typeof o.value === 'object' && !Array.isArray(o.value)
        ? expandDotted(o.value as Record<string, unknown>)
        : o.value;
    return [{ op: o.op, ...(o.path !== undefined ? { path: o.path } : {}), ...(value !== undefined ? { value } : {}) }];
  }) as unknown as ScimPatchOperation[];
  if (operations.length === 0) return structuredClone(resource);
  try {
    patchBodyValidation({ schemas: [PATCH_SCHEMA], Operations: operations });
    return scimPatch(structuredClone(resource) as unknown as ScimResource, operations, {
      mutateDocument: true,
      treatMissingAsAdd: true,
    }) as unknown as T;
  } catch (err) {
    if (err instanceof ScimError) throw err;
    const e = err as { scimCode?: string; message?: string };
    if (e && typeof e === 'object' && 'scimCode' in e)
      throw new ScimError(
        400,
        e.message || 'The operation does not apply.',
        e.scimCode === 'noTarget' ? 'noTarget' : 'invalidPath',
      );
    throw new ScimError(400, 'The operation does not apply to this resource.', 'invalidPath');
  }
}
