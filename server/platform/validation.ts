// Input helpers shared by the routers.
import { z } from 'zod';

/**
 * A number or boolean of a JSON body, taken only as that exact type. trpc-to-openapi turns on Zod coercion
 * for every z.number() and z.boolean() it finds in an input (meant for query strings, where everything is
 * text), which would accept "100" or null for a price and "false" as true. It does not look inside a
 * pipe, so the schema behind this pipe stays strict; the document still shows the inner schema.
 */
export const exact = <T extends z.ZodType>(schema: T) => schema.pipe(z.custom<z.output<T>>(() => true));

/** Any id Postgres reads as a uuid (of any version): checked before a query, which would fail on another. */
export const isUuid = (id: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);

/**
 * Characters that are invisible or change how the text around them reads: bidi embeddings, overrides and
 * isolates (U+202A-U+202E, U+2066-U+2069), zero-width characters (U+200B-U+200D, U+2060, U+FEFF), and C0
 * and C1 controls (U+0000-U+001F, U+007F-U+009F). In a name shown to other people they make one name look
 * like another ("admin" written backwards behind an override) or hide part of it.
 */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const INVISIBLE_OR_CONTROL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200d\u202a-\u202e\u2060\u2066-\u2069\ufeff]/;

/** `text` without the characters above: for names that come from elsewhere (an identity provider's profile). */
export const withoutInvisibleCharacters = (text: string) =>
  text.replace(new RegExp(INVISIBLE_OR_CONTROL.source, 'g'), '');

/**
 * A name people see (of a user, a workspace, a webhook, an API key, a plan): 1 to `max` characters once
 * surrounding spaces are trimmed, with none of the characters above. They are looked for before trimming,
 * since trimming would silently drop a leading BOM or a trailing newline: the client learns that its text
 * was refused rather than finding it changed.
 */
export const displayName = (max: number) =>
  z
    .string()
    .refine((s) => !INVISIBLE_OR_CONTROL.test(s), {
      error: 'A name may not contain invisible or control characters (bidi, zero-width or control characters).',
      abort: true,
    })
    .trim()
    .min(1, { error: 'Name is required.' })
    .max(max);
