// A workspace's single sign-on connections: SAML (by the identity provider's metadata, or its entity id, SSO
// URL and certificate; a second certificate during a roll-over) and OpenID Connect (issuer, client id, and a
// client secret sealed at rest, never answered). Owners only (the router); every change is audited, emitted
// as an event and mailed to the owners.
import type { Selectable } from 'kysely';
import type { SsoConnectionsTable } from '../../db/schema.js';
import type { Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { recordAudit } from '../audit/service.js';
import { emitEvent } from '../events/emit.js';
import { mailOwners } from './owners.js';
import { certificateBody, describeCertificate, readIdpMetadata, spUrls } from './saml.js';

type Deps = Pick<AppDeps, 'db' | 'config' | 'mailer' | 'logger' | 'secrets'>;
type Row = Selectable<SsoConnectionsTable>;

const notFound = () => new AppError('NOT_FOUND', 'No such single sign-on connection in this workspace.');

/** The base URL of this API as identity providers reach it: API_URL, else the request's. */
export const apiBase = (config: AppDeps['config'], requestBase: string) =>
  (config.API_URL ?? requestBase).replace(/\/+$/, '');

export const oidcRedirectUri = (base: string, connectionId: string) => `${base}/auth/sso/oidc/${connectionId}/callback`;

export function toConnection(row: Row, base: string) {
  return {
    id: row.id,
    type: row.type,
    name: row.name,
    status: row.status,
    defaultRole: row.default_role,
    allowIdpInitiated: row.allow_idp_initiated,
    createdAt: row.created_at.toISOString(),
    sp: row.type === 'SAML' ? spUrls(base, row.id) : { redirectUri: oidcRedirectUri(base, row.id) },
    saml:
      row.type === 'SAML'
        ? {
            idpEntityId: row.idp_entity_id ?? '',
            idpSsoUrl: row.idp_sso_url ?? '',
            certificates: row.idp_certificates.map(describeCertificate),
          }
        : null,
    oidc: row.type === 'OIDC' ? { issuer: row.issuer ?? '', clientId: row.client_id ?? '' } : null,
  };
}

const badCertificate = (path: string) =>
  new AppError('BAD_REQUEST', 'The certificate is not a valid X.509 certificate (PEM or base64).', [
    { path, message: 'Not a valid X.509 certificate.', code: 'custom' },
  ]);

function certificateOrThrow(value: string, path: string) {
  const body = certificateBody(value);
  if (!body) throw badCertificate(path);
  return body;
}

const eventData = (row: Row) => ({ connectionId: row.id, type: row.type, name: row.name, status: row.status });

export async function listConnections(
  deps: Pick<AppDeps, 'db' | 'config'>,
  input: { workspaceId: string; base: string },
) {
  const rows = await deps.db
    .selectFrom('sso_connections')
    .selectAll()
    .where('workspace_id', '=', input.workspaceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return { items: rows.map((r) => toConnection(r, input.base)) };
}

async function connectionRow(deps: Pick<AppDeps, 'db'>, workspaceId: string, connectionId: string) {
  const row = await deps.db
    .selectFrom('sso_connections')
    .selectAll()
    .where('id', '=', connectionId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!row) throw notFound();
  return row;
}

export async function getConnection(
  deps: Pick<AppDeps, 'db'>,
  input: { workspaceId: string; connectionId: string; base: string },
) {
  return toConnection(await connectionRow(deps, input.workspaceId, input.connectionId), input.base);
}

export interface CreateConnection {
  workspaceId: string;
  base: string;
  type: 'SAML' | 'OIDC';
  name: string;
  metadataXml?: string;
  idpEntityId?: string;
  idpSsoUrl?: string;
  idpCertificate?: string;
  issuer?: string;
  clientId?: string;
  clientSecret?: string;
}

export async function createConnection(deps: Deps, actor: Actor, input: CreateConnection) {
  const values =
    input.type === 'OIDC'
      ? {
          issuer: input.issuer?.replace(/\/+$/, '') ?? null,
          client_id: input.clientId ?? null,
          client_secret_encrypted: deps.secrets.seal(input.clientSecret ?? ''),
        }
      : input.metadataXml !== undefined
        ? (({ entityId, ssoUrl, certificates }) => ({
            idp_entity_id: entityId,
            idp_sso_url: ssoUrl,
            idp_certificates: certificates,
          }))(readIdpMetadata(input.metadataXml))
        : {
            idp_entity_id: input.idpEntityId ?? null,
            idp_sso_url: input.idpSsoUrl ?? null,
            idp_certificates: [certificateOrThrow(input.idpCertificate ?? '', 'idpCertificate')],
          };
  const row = await deps.db.transaction().execute(async (trx) => {
    const created = await trx
      .insertInto('sso_connections')
      .values({ workspace_id: input.workspaceId, type: input.type, name: input.name, ...values })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(trx, actor, {
      action: 'sso.connection_created',
      targetType: 'sso_connection',
      targetId: created.id,
      workspaceId: input.workspaceId,
      metadata: { type: created.type, name: created.name },
    });
    await emitEvent(trx, input.workspaceId, 'sso_connection.created', eventData(created));
    return created;
  });
  await mailOwners(deps, input.workspaceId, `The ${row.type} single sign-on connection "${row.name}" was added`);
  return toConnection(row, input.base);
}

export interface UpdateConnection {
  workspaceId: string;
  connectionId: string;
  base: string;
  name?: string;
  defaultRole?: 'ADMIN' | 'MEMBER' | 'VIEWER';
  status?: 'ACTIVE' | 'INACTIVE';
  allowIdpInitiated?: boolean;
  idpSsoUrl?: string;
  idpCertificate?: string;
  nextIdpCertificate?: string | null;
  clientSecret?: string;
}

export async function updateConnection(deps: Deps, actor: Actor, input: UpdateConnection) {
  const row = await deps.db.transaction().execute(async (trx) => {
    const before = await trx
      .selectFrom('sso_connections')
      .selectAll()
      .where('id', '=', input.connectionId)
      .where('workspace_id', '=', input.workspaceId)
      .forUpdate()
      .executeTakeFirst();
    if (!before) throw notFound();
    const samlOnly = input.idpSsoUrl ?? input.idpCertificate ?? input.nextIdpCertificate;
    if (samlOnly !== undefined && before.type !== 'SAML')
      throw new AppError('BAD_REQUEST', 'idpSsoUrl and certificates are settings of a SAML connection.');
    if (input.clientSecret !== undefined && before.type !== 'OIDC')
      throw new AppError('BAD_REQUEST', 'clientSecret is a setting of an OIDC connection.');
    let certificates = before.idp_certificates;
    if (input.idpCertificate !== undefined)
      certificates = [certificateOrThrow(input.idpCertificate, 'idpCertificate'), ...certificates.slice(1)];
    if (input.nextIdpCertificate !== undefined)
      certificates = [
        certificates[0],
        ...(input.nextIdpCertificate === null
          ? []
          : [certificateOrThrow(input.nextIdpCertificate, 'nextIdpCertificate')]),
      ];
    const updated = await trx
      .updateTable('sso_connections')
      .set({
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.defaultRole !== undefined ? { default_role: input.defaultRole } : {}),
        ...(input.status !== undefined ? { status: input.status } : {}),
        ...(input.allowIdpInitiated !== undefined ? { allow_idp_initiated: input.allowIdpInitiated } : {}),
        ...(input.idpSsoUrl !== undefined ? { idp_sso_url: input.idpSsoUrl } : {}),
        ...(input.clientSecret !== undefined ? { client_secret_encrypted: deps.secrets.seal(input.clientSecret) } : {}),
        idp_certificates: certificates,
        updated_at: new Date(),
      })
      .where('id', '=', before.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    const changed = [
      'name',
      'defaultRole',
      'status',
      'allowIdpInitiated',
      'idpSsoUrl',
      'idpCertificate',
      'nextIdpCertificate',
      'clientSecret',
    ].filter((k) => input[k as keyof UpdateConnection] !== undefined);
    await recordAudit(trx, actor, {
      action: 'sso.connection_updated',
      targetType: 'sso_connection',
      targetId: updated.id,
      workspaceId: input.workspaceId,
      metadata: { changed: changed.join(','), status: updated.status, defaultRole: updated.default_role },
    });
    await emitEvent(trx, input.workspaceId, 'sso_connection.updated', eventData(updated));
    return updated;
  });
  await mailOwners(deps, input.workspaceId, `The single sign-on connection "${row.name}" was changed`);
  return toConnection(row, input.base);
}

export async function deleteConnection(deps: Deps, actor: Actor, input: { workspaceId: string; connectionId: string }) {
  const row = await deps.db.transaction().execute(async (trx) => {
    const removed = await trx
      .deleteFrom('sso_connections')
      .where('id', '=', input.connectionId)
      .where('workspace_id', '=', input.workspaceId)
      .returningAll()
      .executeTakeFirst();
    if (!removed) throw notFound();
    await recordAudit(trx, actor, {
      action: 'sso.connection_deleted',
      targetType: 'sso_connection',
      targetId: removed.id,
      workspaceId: input.workspaceId,
      metadata: { type: removed.type, name: removed.name },
    });
    await emitEvent(trx, input.workspaceId, 'sso_connection.deleted', eventData(removed));
    return removed;
  });
  await mailOwners(deps, input.workspaceId, `The single sign-on connection "${row.name}" was removed`);
  return { message: `The connection "${row.name}" is removed.` };
}
