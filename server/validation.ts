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
