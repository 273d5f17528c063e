// The OpenAPI response entry of an error answer: the shared `Error` schema (defined by openapi/document.ts),
// with the codes this answer can carry as the enum of its `code`. For the plain Express routes that document
// themselves by hand (webhooks, uploads, metrics); openapi/document.ts adds what every route can answer.
import type { ErrorCode } from './errors.js';

export const ERROR_SCHEMA_REF = '#/components/schemas/Error';

export const errorResponse = (description: string, codes: ErrorCode[]) => ({
  description,
  content: { 'application/json': { schema: errorSchema(codes) } },
});

/** The Error schema, its `code` narrowed to `codes`. */
export const errorSchema = (codes: readonly string[]) => ({
  allOf: [{ $ref: ERROR_SCHEMA_REF }, { type: 'object', properties: { code: { type: 'string', enum: [...codes] } } }],
});

/** The codes an error response's schema names (errorSchema), or none. */
export function codesOf(response: { content?: Record<string, { schema?: unknown }> } | undefined): string[] {
  const schema = response?.content?.['application/json']?.schema as
    { allOf?: Array<{ properties?: { code?: { enum?: string[] } } }> } | undefined;
  return schema?.allOf?.[1]?.properties?.code?.enum ?? [];
}
