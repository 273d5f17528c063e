// oidc-provider's storage in Postgres (oauth_payloads), so every instance sees the same registered
// clients, codes, tokens and grants: one row per model instance, its payload as JSON.
import { sql } from 'kysely';
import type { Db } from '../../db/index.js';

type Payload = Record<string, unknown> & { grantId?: string; uid?: string; userCode?: string; consumed?: number };

/** The adapter class oidc-provider instantiates once per model (`new Adapter('AccessToken')`). */
export function postgresAdapter(db: Db) {
  return class PostgresAdapter {
    constructor(private readonly model: string) {}

    async upsert(id: string, payload: Payload, expiresIn?: number) {
      const expires = expiresIn ? new Date(Date.now() + expiresIn * 1000) : null;
      await db
        .insertInto('oauth_payloads')
        .values({
          model: this.model,
          id,
          payload: JSON.stringify(payload),
          grant_id: payload.grantId ?? null,
          uid: payload.uid ?? null,
          user_code: payload.userCode ?? null,
          expires_at: expires,
        })
        .onConflict((oc) =>
          oc.columns(['model', 'id']).doUpdateSet((eb) => ({
            payload: eb.ref('excluded.payload'),
            grant_id: eb.ref('excluded.grant_id'),
            uid: eb.ref('excluded.uid'),
            user_code: eb.ref('excluded.user_code'),
            expires_at: eb.ref('excluded.expires_at'),
          })),
        )
        .execute();
    }

    private async findBy(column: 'id' | 'uid' | 'user_code', value: string) {
      const row = await db
        .selectFrom('oauth_payloads')
        .select(['payload', 'consumed_at'])
        .where('model', '=', this.model)
        .where(column, '=', value)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
        .executeTakeFirst();
      if (!row) return undefined;
      const payload = row.payload as Payload;
      return row.consumed_at ? { ...payload, consumed: Math.floor(row.consumed_at.getTime() / 1000) } : payload;
    }

    find(id: string) {
      return this.findBy('id', id);
    }

    findByUid(uid: string) {
      return this.findBy('uid', uid);
    }

    findByUserCode(userCode: string) {
      return this.findBy('user_code', userCode);
    }

    async consume(id: string) {
      await db
        .updateTable('oauth_payloads')
        .set({ consumed_at: sql<Date>`now()` })
        .where('model', '=', this.model)
        .where('id', '=', id)
        .execute();
    }

    async destroy(id: string) {
      await db.deleteFrom('oauth_payloads').where('model', '=', this.model).where('id', '=', id).execute();
    }

    async revokeByGrantId(grantId: string) {
      await revokeByGrantId(db, grantId);
    }
  };
}

/** Every code and token of a grant, of any model: they stop working at once. */
export async function revokeByGrantId(db: Db, grantId: string) {
  await db.deleteFrom('oauth_payloads').where('grant_id', '=', grantId).execute();
  await db.deleteFrom('oauth_payloads').where('model', '=', 'Grant').where('id', '=', grantId).execute();
}
