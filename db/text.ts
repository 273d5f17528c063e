// Text helpers for SQL built from user input.

/** `%`, `_` and `\` match literally in an ILIKE pattern built from user input. */
export const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
