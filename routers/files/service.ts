// Files of workspaces, avatars and logos, and workspace branding. Types are decided by magic bytes, never by
// name or header. Images are decoded and re-encoded (so nothing of the original payload survives), with a
// pixel limit against decompression bombs. Objects are stored under generated names, and a failed database
// change removes the object it stored. The HTTP side (multipart, who may call) is uploads.ts.
import crypto from 'node:crypto';
import type { ResizeOptions } from 'sharp';
import type { PlatformRole } from '../../db/schema.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { platformRoleHas } from '../../server/platform/permissions.js';
import { isUuid } from '../../server/platform/validation.js';
import { signedInUser, type Actor } from '../../server/platform/actor.js';
import { recordAudit } from '../audit/service.js';
import type { WorkspaceAccess } from '../workspaces/access.js';
import type { BrandingChanges } from './schemas.js';
import { MAX_FRAMES, MAX_TOTAL_PIXELS, type ImageJob } from './image-jobs.js';

/**
 * file-type is loaded by the first upload, not at start-up: most processes serve none. Images are worked in
 * the image process (images.ts), which loads sharp: this process never does.
 */
const fileTypeFromBuffer = async (buffer: Buffer) => (await import('file-type')).fileTypeFromBuffer(buffer);

export const MiB = 1024 * 1024;
/** The largest file of each upload route. */
export const UPLOAD_LIMITS = { file: 10 * MiB, avatar: 2 * MiB, logo: 1 * MiB } as const;
/** Avatars and logos: still images, re-encoded to WebP. */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp']);
/** Workspace files: images (re-encoded in their own format, GIF animation kept) and PDF (as sent). */
const REENCODED_UPLOAD_TYPES = new Set([...IMAGE_TYPES, 'image/gif']);
const UPLOAD_TYPES = new Set([...REENCODED_UPLOAD_TYPES, 'application/pdf']);

type Deps = Pick<AppDeps, 'db' | 'storage' | 'logger' | 'imageWork'>;

/** A file as the multipart form brought it. */
export interface Upload {
  originalname: string;
  size: number;
  buffer: Buffer;
}

const fileNotFound = () => new AppError('NOT_FOUND', 'File not found.');

/** The upload, checked: not empty, a plain name, of an allowed type by its bytes. */
async function checkedFile(file: Upload, allowed: Set<string>) {
  if (file.size === 0) throw new AppError('BAD_REQUEST', 'The file is empty.');
  // Browsers send a plain name; folders, `..` or control characters only come from a crafted request.
  // eslint-disable-next-line no-control-regex -- control characters are what it looks for
  if (/[/\\\x00-\x1f]|^\.\.?$/.test(file.originalname)) {
    throw new AppError(
      'BAD_REQUEST',
      'The file name must be a plain name, without folders, ".." or control characters.',
    );
  }
  const type = await fileTypeFromBuffer(file.buffer);
  if (!type || !allowed.has(type.mime)) {
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      `This kind of file is not accepted here (by its content). Accepted: ${[...allowed].join(', ')}.`,
    );
  }
  return { file, mime: type.mime, ext: type.ext };
}

const unreadable = () => new AppError('BAD_REQUEST', 'The image could not be read, or its dimensions are too large.');

/**
 * An image's job done in the image process (deps.imageWork: a few at a time per process, 503 past the
 * queue): the re-encoded bytes, or the 400 that says why the image is refused.
 */
async function imageWork(deps: Pick<Deps, 'imageWork' | 'logger'>, job: ImageJob): Promise<Buffer> {
  const outcome = await deps.imageWork.run(job).catch((err: unknown) => {
    if (err instanceof AppError) throw err;
    // The image process died on this image (or could not start): refused as an image that does not decode.
    deps.logger.warn({ err }, 'the image process failed');
    throw unreadable();
  });
  if ('data' in outcome) return Buffer.from(outcome.data.buffer, outcome.data.byteOffset, outcome.data.byteLength);
  if (outcome.refused === 'frames')
    throw new AppError('BAD_REQUEST', `The image has ${outcome.frames} frames: at most ${MAX_FRAMES} are accepted.`);
  if (outcome.refused === 'pixels')
    throw new AppError(
      'BAD_REQUEST',
      `The image has too many pixels across its frames: at most ${MAX_TOTAL_PIXELS / 1_000_000} megapixels.`,
    );
  throw unreadable();
}

/** Decodes and re-encodes an image to WebP; anything that does not decode as one is refused. */
function reencode(
  deps: Pick<Deps, 'imageWork' | 'logger'>,
  buffer: Buffer,
  resize: ResizeOptions & { width: number; height: number },
) {
  return imageWork(deps, { kind: 'webp', data: buffer, resize });
}

/**
 * Removes an object the database does not (or no longer) point at. Best effort: a storage failure here is
 * only logged (an orphaned object is harmless).
 */
async function removeObject(deps: Deps, key: string, which: 'replaced file' | 'failed upload') {
  await deps.storage
    .delete(key)
    .catch((err: unknown) => deps.logger.warn({ err, key }, `could not remove the object of a ${which} from storage`));
}

/**
 * Stores the object, then runs `save`, the database change that points at it. If that change fails, the
 * object is removed again (best effort, logged), so a failed request leaves nothing behind in storage.
 */
async function storeThenSave<T>(
  deps: Deps,
  key: string,
  data: Buffer,
  contentType: string,
  save: () => Promise<T>,
): Promise<T> {
  await deps.storage.put(key, data, contentType);
  try {
    return await save();
  } catch (err) {
    await removeObject(deps, key, 'failed upload');
    throw err;
  }
}

const newKey = (folder: string, ext: string) => `${folder}/${crypto.randomUUID()}.${ext}`;
const safeName = (name: string) => name.replace(/[^\w.-]+/g, '_').slice(-120);

// ---------------------------------------------------------------- workspace files

/** The storage provider and what the upload route accepts. */
export function providerStatus({ storage }: Pick<AppDeps, 'storage'>) {
  return {
    provider: storage.provider,
    configured: storage.configured,
    maxUploadBytes: UPLOAD_LIMITS.file,
    acceptedTypes: [...UPLOAD_TYPES],
  };
}

/** Stores a workspace file, uploaded by the actor: images re-encoded (same size and format), PDF as sent. */
export async function storeUpload(deps: Deps, actor: Actor, input: { workspaceId: string; upload: Upload }) {
  const { workspaceId, upload } = input;
  const uploadedBy = signedInUser(actor).id;
  const { file, mime, ext } = await checkedFile(upload, UPLOAD_TYPES);
  const data = REENCODED_UPLOAD_TYPES.has(mime)
    ? await imageWork(deps, { kind: 'same-format', data: file.buffer, animated: mime === 'image/gif' })
    : file.buffer;
  const key = newKey('files', ext);
  const row = await storeThenSave(deps, key, data, mime, () =>
    deps.db
      .insertInto('files')
      .values({
        workspace_id: workspaceId,
        uploaded_by: uploadedBy,
        kind: 'upload',
        storage_key: key,
        content_type: mime,
        size_bytes: data.length,
        original_name: safeName(file.originalname),
      })
      .returningAll()
      .executeTakeFirstOrThrow(),
  );
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    contentType: row.content_type,
    size: row.size_bytes,
    name: row.original_name,
    url: `/storage/files/${row.id}`,
    createdAt: row.created_at.toISOString(),
  };
}

/** The row of a stored file (404 for an id that is not one). Who may read it is the caller's to decide. */
export async function findFile({ db }: Pick<AppDeps, 'db'>, { fileId }: { fileId: string }) {
  const row = isUuid(fileId)
    ? await db.selectFrom('files').selectAll().where('id', '=', fileId).executeTakeFirst()
    : undefined;
  if (!row) throw fileNotFound();
  return row;
}

/** A stored file's bytes and type; images are shown inline, anything else is an attachment. */
export async function readFile(
  { storage }: Pick<AppDeps, 'storage'>,
  file: { storage_key: string; content_type: string },
) {
  const data = await storage.get(file.storage_key);
  if (!data) throw fileNotFound();
  return { data, contentType: file.content_type, inline: REENCODED_UPLOAD_TYPES.has(file.content_type) };
}

// ---------------------------------------------------------------- avatars

/** Sets the actor's avatar: 512 x 512, re-encoded to WebP. The one it replaces is removed. */
export async function setAvatar(deps: Deps, actor: Actor, { upload }: { upload: Upload }) {
  const userId = signedInUser(actor).id;
  const { file } = await checkedFile(upload, IMAGE_TYPES);
  // The client crops to a square; the server makes sure.
  const data = await reencode(deps, file.buffer, { width: 512, height: 512, fit: 'cover' });
  const key = newKey('avatars', 'webp');
  // The row lock makes concurrent uploads take turns, so each one removes the avatar it replaced.
  const previous = await storeThenSave(deps, key, data, 'image/webp', () =>
    deps.db.transaction().execute(async (trx) => {
      const previous = await trx
        .selectFrom('users')
        .select('avatar_key')
        .where('id', '=', userId)
        .forUpdate()
        .executeTakeFirstOrThrow();
      await trx
        .updateTable('users')
        .set({ avatar_key: key, avatar_updated_at: new Date(), updated_at: new Date() })
        .where('id', '=', userId)
        .execute();
      return previous;
    }),
  );
  if (previous.avatar_key) await removeObject(deps, previous.avatar_key, 'replaced file');
  return {
    avatarUrl: `/users/${userId}/avatar`,
    contentType: 'image/webp',
    width: 512,
    height: 512,
    size: data.length,
  };
}

/**
 * A user's avatar, for a viewer (the actor) who may see it: their own, those of people they share a
 * workspace with (`memberships`: the viewer's), and every one for a platform admin (admin.read, of
 * `callerPlatformRole`). 404 otherwise, as when there is none.
 */
export async function avatarOf(
  deps: Pick<Deps, 'db' | 'storage'>,
  actor: Actor,
  input: { userId: string; callerPlatformRole: PlatformRole; memberships: WorkspaceAccess[] },
) {
  const { userId } = input;
  const viewer = { id: signedInUser(actor).id, platformRole: input.callerPlatformRole, memberships: input.memberships };
  const visible =
    isUuid(userId) &&
    (userId === viewer.id ||
      platformRoleHas(viewer.platformRole, 'admin.read') ||
      (viewer.memberships.length > 0 &&
        Boolean(
          await deps.db
            .selectFrom('workspace_members')
            .select('user_id')
            .where('user_id', '=', userId)
            .where(
              'workspace_id',
              'in',
              viewer.memberships.map((m) => m.id),
            )
            .executeTakeFirst(),
        )));
  const row = visible
    ? await deps.db.selectFrom('users').select('avatar_key').where('id', '=', userId).executeTakeFirst()
    : undefined;
  const data = row?.avatar_key ? await deps.storage.get(row.avatar_key) : undefined;
  if (!data) throw new AppError('NOT_FOUND', 'No avatar.');
  return data;
}

// ---------------------------------------------------------------- branding

/** Sets a workspace's logo: at most 1024 x 1024, re-encoded to WebP. The logo it replaces is removed. */
export async function setLogo(deps: Deps, actor: Actor, input: { workspaceId: string; upload: Upload }) {
  const { workspaceId, upload } = input;
  const uploadedBy = signedInUser(actor).id;
  const { file } = await checkedFile(upload, IMAGE_TYPES);
  const data = await reencode(deps, file.buffer, {
    width: 1024,
    height: 1024,
    fit: 'inside',
    withoutEnlargement: true,
  });
  const key = newKey('logos', 'webp');
  const { row, replaced } = await storeThenSave(deps, key, data, 'image/webp', () =>
    deps.db.transaction().execute(async (trx) => {
      const previous = await trx
        .selectFrom('workspaces')
        .select('logo_file_id')
        .where('id', '=', workspaceId)
        .forUpdate()
        .executeTakeFirstOrThrow();
      const row = await trx
        .insertInto('files')
        .values({
          workspace_id: workspaceId,
          uploaded_by: uploadedBy,
          kind: 'logo',
          storage_key: key,
          content_type: 'image/webp',
          size_bytes: data.length,
          original_name: 'logo.webp',
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx
        .updateTable('workspaces')
        .set({ logo_file_id: row.id, updated_at: new Date() })
        .where('id', '=', workspaceId)
        .execute();
      // The previous logo goes with its replacement: its row now, its object after the commit.
      const replaced = previous.logo_file_id
        ? await trx
            .deleteFrom('files')
            .where('id', '=', previous.logo_file_id)
            .where('kind', '=', 'logo')
            .returning('storage_key')
            .executeTakeFirst()
        : undefined;
      return { row, replaced };
    }),
  );
  if (replaced) await removeObject(deps, replaced.storage_key, 'replaced file');
  return { logoUrl: `/storage/files/${row.id}`, contentType: 'image/webp', size: row.size_bytes };
}

export async function getBranding({ db }: Pick<AppDeps, 'db'>, { workspaceId }: { workspaceId: string }) {
  const w = await db
    .selectFrom('workspaces')
    .select(['id', 'branding_display_name', 'branding_primary_color', 'branding_accent_color', 'logo_file_id'])
    .where('id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  return {
    workspaceId: w.id,
    displayName: w.branding_display_name,
    primaryColor: w.branding_primary_color,
    accentColor: w.branding_accent_color,
    logoUrl: w.logo_file_id ? `/storage/files/${w.logo_file_id}` : null,
  };
}

export async function updateBranding(
  deps: Pick<AppDeps, 'db'>,
  actor: Actor,
  input: BrandingChanges & { workspaceId: string },
) {
  const { workspaceId, ...changes } = input;
  await deps.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('workspaces')
      .set({
        ...(changes.displayName !== undefined && { branding_display_name: changes.displayName }),
        ...(changes.primaryColor !== undefined && { branding_primary_color: changes.primaryColor }),
        ...(changes.accentColor !== undefined && { branding_accent_color: changes.accentColor }),
        updated_at: new Date(),
      })
      .where('id', '=', workspaceId)
      .execute();
    await recordAudit(trx, actor, {
      action: 'workspace.updated',
      targetType: 'workspace',
      targetId: workspaceId,
      workspaceId,
      metadata: { branding: true },
    });
  });
  return getBranding(deps, { workspaceId });
}
