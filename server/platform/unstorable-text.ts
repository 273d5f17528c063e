// Text that Postgres cannot store: a NUL character (text and jsonb refuse it) or an unpaired UTF-16
// surrogate (jsonb refuses its escape). Such a string used to reach a statement and fail it, a 500.
// Our clients' is refused where it comes in: in every JSON body (keys too), in the URL, and in the JSON
// `input` of a `/trpc` query (the uploads' file names are checked by their own rules,
// routers/files/uploads.ts). Text that others make for us (a webhook endpoint's answer, an AI provider's
// output, a billing processor's event id) is made storable instead (storableText).
import type { RequestHandler } from 'express';
import { trpcProcedures } from './trpc-path.js';

export class UnstorableText extends Error {
  constructor() {
    super('Text may not contain NUL characters or unpaired UTF-16 surrogates.');
  }
}

/** A NUL, or a surrogate that is not half of a pair (with the `u` flag, a pair is one code point). */
const UNSTORABLE = /[\0\p{Cs}]/u;
const EVERY_UNSTORABLE = new RegExp(UNSTORABLE.source, 'gu');

/**
 * Text of somebody else's making (a webhook endpoint's answer, an AI provider's output) as Postgres can
 * store it: each NUL and unpaired surrogate becomes U+FFFD. Input of our own clients is refused instead.
 */
export const storableText = (text: string) => (UNSTORABLE.test(text) ? text.replace(EVERY_UNSTORABLE, '\ufffd') : text);

/** A `JSON.parse` reviver that throws UnstorableText at the first string (value or key) Postgres refuses. */
export function refuseUnstorableText(key: string, value: unknown): unknown {
  if (UNSTORABLE.test(key) || (typeof value === 'string' && UNSTORABLE.test(value))) throw new UnstorableText();
  return value;
}

/**
 * Refuses a URL with a NUL in it (`%00`, in the path or the query), and a `/trpc` query whose JSON input
 * holds such text (`"\u0000"`). A malformed input is left to tRPC, which answers it.
 */
export const refuseUnstorableUrl: RequestHandler = (req, _res, next) => {
  if (req.url.includes('%00')) return next(new UnstorableText());
  if (req.method === 'GET' && trpcProcedures(req.path) && typeof req.query.input === 'string') {
    try {
      JSON.parse(req.query.input, refuseUnstorableText);
    } catch (err) {
      if (err instanceof UnstorableText) return next(err);
    }
  }
  next();
};
