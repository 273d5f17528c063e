// The `requireSso` policy of a workspace: members whose address is on one of its VERIFIED domains must come
// through one of its connections (403 SSO_REQUIRED on its routes otherwise); OWNERs keep access with any
// sign-in (break-glass), audited once per session. Called for every workspace route of such a workspace
// (server/platform/trpc.ts, through AppDeps.auth.ssoPolicy).
import { sql } from 'kysely';
import type { Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import type { Principal, WorkspaceAccess } from '../../server/platform/principal.js';
import { recordAudit } from '../audit/service.js';

export async function enforceSsoPolicy(
  deps: Pick<AppDeps, 'db'>,
  actor: Actor,
  principal: Principal,
  access: WorkspaceAccess,
): Promise<void> {
  const { db } = deps;
  const domain = principal.user.email.split('@')[1]?.toLowerCase() ?? '';
  const onDomain = await db
    .selectFrom('workspace_domains')
    .select('id')
    .where('workspace_id', '=', access.id)
    .where('domain', '=', domain)
    .where('status', '=', 'VERIFIED')
    .executeTakeFirst();
  if (!onDomain) return;
  const throughSso = await db
    .selectFrom('sessions as s')
    .innerJoin('sso_connections as c', 'c.id', 's.sso_connection_id')
    .select('s.id')
    .where('s.id', '=', principal.sessionId)
    .where('c.workspace_id', '=', access.id)
    .executeTakeFirst();
  if (throughSso) return;
  if (access.role !== 'OWNER')
    throw new AppError(
      'SSO_REQUIRED',
      "This workspace requires single sign-on: sign in through your organisation's identity provider (GET /auth/sso/start).",
    );
  const noted = await db
    .selectFrom('audit_logs')
    .select('id')
    .where('action', '=', 'sso.break_glass')
    .where('workspace_id', '=', access.id)
    .where(sql<string>`metadata->>'sessionId'`, '=', principal.sessionId)
    .executeTakeFirst();
  if (!noted)
    await recordAudit(db, actor, {
      action: 'sso.break_glass',
      targetType: 'workspace',
      targetId: access.id,
      workspaceId: access.id,
      metadata: { sessionId: principal.sessionId },
    });
}

/** Turning `requireSso` on needs an ACTIVE connection and a VERIFIED domain (409 INVALID_STATE otherwise). */
export async function checkRequireSso(deps: Pick<AppDeps, 'db'>, workspaceId: string) {
  const [connection, domain] = await Promise.all([
    deps.db
      .selectFrom('sso_connections')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('status', '=', 'ACTIVE')
      .executeTakeFirst(),
    deps.db
      .selectFrom('workspace_domains')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('status', '=', 'VERIFIED')
      .executeTakeFirst(),
  ]);
  if (!connection || !domain)
    throw new AppError(
      'INVALID_STATE',
      'Requiring single sign-on needs an ACTIVE connection and a VERIFIED domain: add them first.',
    );
}
