// The OpenAPI response entry of an error answer (the shared `Error` schema of openapi/document.ts), for
// the plain Express routes that document themselves by hand (webhooks, uploads, metrics).
export const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});
