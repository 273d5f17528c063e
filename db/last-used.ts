// A credential's `last_used_at`, written about once a minute: this process skips the write when it wrote
// for the same row within the minute, and the statement is conditional, so several instances together also
// write about once a minute. API keys and SCIM tokens use it on every request they authenticate.
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

export const LAST_USED_EVERY_MS = 60_000;
/** The most rows remembered; past it the oldest is forgotten (at worst one extra conditional write). */
const REMEMBERED_MAX = 10_000;
const written = new Map<string, number>();

export async function touchLastUsed(
  db: Kysely<Database>,
  table: 'api_keys' | 'scim_tokens',
  id: string,
  now = Date.now(),
): Promise<void> {
  const key = `${table}:${id}`;
  if (now - (written.get(key) ?? 0) < LAST_USED_EVERY_MS) return;
  written.delete(key);
  if (written.size >= REMEMBERED_MAX) written.delete(written.keys().next().value!);
  written.set(key, now);
  // Both tables have the two columns: typed as one of them.
  await db
    .updateTable(table as 'api_keys')
    .set({ last_used_at: new Date(now) })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', new Date(now - LAST_USED_EVERY_MS))]))
    .execute();
}
