// Multipart uploads, as plain Express routes (trpc-to-openapi refuses multipart), documented in
// /openapi.json through uploadOpenApiPaths: workspace files (field `file`, 10 MiB), avatars (`avatar`,
// 2 MiB) and workspace logos (`logo`, 1 MiB). Types are decided by magic bytes, never by name or header.
// Images are decoded and re-encoded (so nothing of the original payload survives), with a pixel limit
// against decompression bombs. Files are stored under generated names and served back with nosniff.
import crypto from 'node:crypto';
import express, { Router, type Request, type RequestHandler } from 'express';
import multer from 'multer';
import sharp, { type ResizeOptions } from 'sharp';
import { fileTypeFromBuffer } from 'file-type';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { resolveWorkspaceAccess } from '../../server/platform/access.js';
import type { WorkspacePermission } from '../../server/platform/permissions.js';
import { noteRequest } from '../../server/platform/monitoring.js';
import { isUuid } from '../../server/platform/validation.js';
import { authenticateRequest } from '../../server/platform/trpc.js';
import type { Principal } from '../auth/sessions.js';
import type { WorkspaceAccess } from '../workspaces/access.js';
import { errorResponse } from '../../openapi/error-response.js';
import { refuseContentEncoding, refuseDeclaredLength } from '../../server/platform/request-body.js';

const MiB = 1024 * 1024;
/** Avatars and logos: still images, re-encoded to WebP. */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp']);
/** Workspace files: images (re-encoded in their own format, GIF animation kept) and PDF (as sent). */
const REENCODED_UPLOAD_TYPES = new Set([...IMAGE_TYPES, 'image/gif']);
const UPLOAD_TYPES = new Set([...REENCODED_UPLOAD_TYPES, 'application/pdf']);
/** About 40 megapixels: a real photo passes, a header claiming 50,000 x 50,000 does not. */
const MAX_PIXELS = 40_000_000;

type Deps = Pick<AppDeps, 'db' | 'config' | 'storage' | 'logger' | 'auth'>;

/**
 * What a form may add to its file's bytes: the multipart framing and the form fields (at most 10 of 1 KiB).
 * A request declaring more than the file's limit and this is refused before multer reads it.
 */
const FORM_ALLOWANCE_BYTES = 64 * 1024;

/**
 * One file from `field`, at most `maxBytes`, in memory. Errors become the service's error answers. A
 * Content-Length over what such a form can weigh is a 413 before a byte is read.
 */
function singleFile(field: string, maxBytes: number): RequestHandler[] {
  const upload = multer({ storage: multer.memoryStorage(), preservePath: true, limits: { fileSize: maxBytes, files: 1, fields: 10, fieldSize: 1024 } }).single(field);
  const tooLarge = `The request is larger than a file of ${maxBytes / MiB} MiB (the limit) and its form fields.`;
  return [
    refuseDeclaredLength(maxBytes + FORM_ALLOWANCE_BYTES, tooLarge),
    (req, res, next) =>
      upload(req, res, (err: unknown) => {
        if (!err) return next();
        if (err instanceof multer.MulterError) {
          if (err.code === 'LIMIT_FILE_SIZE') {
            return next(new AppError('PAYLOAD_TOO_LARGE', `The file is larger than ${maxBytes / MiB} MiB.`));
          }
          return next(new AppError('BAD_REQUEST', `Send one file in the multipart field "${field}".`));
        }
        return next(new AppError('BAD_REQUEST', 'Send the file as multipart/form-data.'));
      }),
  ];
}

/** Uploads are read as sent: multer does not decode a Content-Encoding, and images and PDF are compressed. */
const refuseEncodedBody = refuseContentEncoding([]);

function requireMultipart(field: string): RequestHandler {
  return (req, res, next) => {
    if (!req.is('multipart/form-data')) return next(new AppError('UNSUPPORTED_MEDIA_TYPE', `Send multipart/form-data with the file in the field "${field}".`));
    refuseEncodedBody(req, res, next);
  };
}

/** The signed-in caller (401 without a valid token, 403 USER_SUSPENDED). */
async function signedIn(deps: Deps, req: Request): Promise<Principal> {
  const principal = await authenticateRequest(deps, req);
  noteRequest(req, { userId: principal.user.id });
  return principal;
}

/** The workspace `workspaceId` names (default: the active one), checked for `permission`. */
function workspaceFor(deps: Deps, req: Request, principal: Principal, permission: WorkspacePermission, workspaceId: unknown): WorkspaceAccess {
  const workspace = resolveWorkspaceAccess({ email: principal.user.email, memberships: principal.memberships }, workspaceId, permission, {
    orActiveWorkspace: true,
    config: deps.config,
  });
  noteRequest(req, { workspaceId: workspace.id });
  return workspace;
}

/**
 * Authenticates, and checks `permission` on the workspace `workspaceIdOf` names (when it names one), before
 * multer reads the body: a refused caller is answered at once, instead of after the server has buffered up
 * to 10 MiB of their upload. The handler asks signedIn again, which answers the same stored lookup.
 */
function authenticateFirst(deps: Deps, permission?: WorkspacePermission, workspaceIdOf?: (req: Request) => unknown): RequestHandler {
  return (req, _res, next) =>
    void (async () => {
      const principal = await signedIn(deps, req);
      const workspaceId = workspaceIdOf?.(req);
      if (permission && workspaceId !== undefined && workspaceId !== '') workspaceFor(deps, req, principal, permission, workspaceId);
    })().then(() => next(), next);
}


const fileNotFound = () => new AppError('NOT_FOUND', 'File not found.');

/** The file of the request: present, not empty, of an allowed type by its bytes. */
async function checkedFile(req: Request, field: string, allowed: Set<string>) {
  const file = req.file;
  if (!file || file.fieldname !== field) throw new AppError('BAD_REQUEST', `Send one file in the multipart field "${field}".`);
  if (file.size === 0) throw new AppError('BAD_REQUEST', 'The file is empty.');
  // Browsers send a plain name; folders, `..` or control characters only come from a crafted request.
  if (/[/\\\x00-\x1f]|^\.\.?$/.test(file.originalname)) {
    throw new AppError('BAD_REQUEST', 'The file name must be a plain name, without folders, ".." or control characters.');
  }
  const type = await fileTypeFromBuffer(file.buffer);
  if (!type || !allowed.has(type.mime)) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `This kind of file is not accepted here (by its content). Accepted: ${[...allowed].join(', ')}.`);
  }
  return { file, mime: type.mime, ext: type.ext };
}

/** Decodes and re-encodes an image; anything that does not decode as one is refused. */
async function reencode(buffer: Buffer, resize: ResizeOptions & { width: number; height: number }) {
  try {
    return await sharp(buffer, { limitInputPixels: MAX_PIXELS, failOn: 'error' }).rotate().resize(resize).webp({ quality: 85 }).toBuffer();
  } catch {
    throw new AppError('BAD_REQUEST', 'The image could not be read, or its dimensions are too large.');
  }
}

const asyncRoute =
  (fn: (req: Request, res: express.Response) => Promise<void>): RequestHandler =>
  (req, res, next) =>
    void fn(req, res).catch(next);

/**
 * Removes an object the database does not (or no longer) point at. Best effort: a storage failure here is
 * only logged (an orphaned object is harmless).
 */
async function removeObject(deps: Deps, key: string, which: 'replaced file' | 'failed upload') {
  await deps.storage.delete(key).catch((err: unknown) => deps.logger.warn({ err, key }, `could not remove the object of a ${which} from storage`));
}

/**
 * Stores the object, then runs `save`, the database change that points at it. If that change fails, the
 * object is removed again (best effort, logged), so a failed request leaves nothing behind in storage.
 */
async function storeThenSave<T>(deps: Deps, key: string, data: Buffer, contentType: string, save: () => Promise<T>): Promise<T> {
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

export function uploadRoutes(deps: Deps): Router {
  const routes = Router();

  routes.post(
    '/storage/upload',
    requireMultipart('file'),
    // A workspaceId in the query is checked before the body is read; one in the form only after it.
    authenticateFirst(deps, 'files.write', (req) => req.query.workspaceId),
    singleFile('file', 10 * MiB),
    asyncRoute(async (req, res) => {
      const principal = await signedIn(deps, req);
      const { user } = principal;
      const workspace = workspaceFor(deps, req, principal, 'files.write', req.body?.workspaceId ?? req.query.workspaceId);
      const { file, mime, ext } = await checkedFile(req, 'file', UPLOAD_TYPES);
      // Images are stored re-encoded (same size and format), PDF as sent.
      const data = REENCODED_UPLOAD_TYPES.has(mime)
        ? await sharp(file.buffer, { limitInputPixels: MAX_PIXELS, failOn: 'error', animated: mime === 'image/gif' })
            .rotate()
            .toBuffer()
            .catch(() => {
              throw new AppError('BAD_REQUEST', 'The image could not be read, or its dimensions are too large.');
            })
        : file.buffer;
      const key = newKey('files', ext);
      const row = await storeThenSave(deps, key, data, mime, () =>
        deps.db
          .insertInto('files')
          .values({ workspace_id: workspace.id, uploaded_by: user.id, kind: 'upload', storage_key: key, content_type: mime, size_bytes: data.length, original_name: safeName(file.originalname) })
          .returningAll()
          .executeTakeFirstOrThrow(),
      );
      res.status(201).json({
        id: row.id,
        workspaceId: row.workspace_id,
        contentType: row.content_type,
        size: row.size_bytes,
        name: row.original_name,
        url: `/storage/files/${row.id}`,
        createdAt: row.created_at.toISOString(),
      });
    }),
  );

  routes.get(
    '/storage/files/:fileId',
    asyncRoute(async (req, res) => {
      // Signed in before the lookup, so an anonymous caller gets 401 whether or not the file exists.
      const principal = await signedIn(deps, req);
      const fileId = String(req.params.fileId);
      const row = isUuid(fileId) ? await deps.db.selectFrom('files').selectAll().where('id', '=', fileId).executeTakeFirst() : undefined;
      if (!row) throw fileNotFound();
      // Members of the file's workspace only: others learn nothing (the 404 of a missing file). Its members
      // are told when the workspace is not ACTIVE (WORKSPACE_UNAVAILABLE), as on its other routes.
      try {
        workspaceFor(deps, req, principal, 'files.read', row.workspace_id);
      } catch (err) {
        throw err instanceof AppError && err.code === 'NOT_FOUND' ? fileNotFound() : err;
      }
      const data = await deps.storage.get(row.storage_key);
      if (!data) throw fileNotFound();
      res.setHeader('Content-Type', row.content_type);
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
      res.setHeader('Content-Disposition', `${REENCODED_UPLOAD_TYPES.has(row.content_type) ? 'inline' : 'attachment'}; filename="${row.id}"`);
      res.setHeader('Cache-Control', 'private, max-age=300');
      res.end(data);
    }),
  );

  routes.post(
    '/profile/avatar',
    requireMultipart('avatar'),
    authenticateFirst(deps),
    singleFile('avatar', 2 * MiB),
    asyncRoute(async (req, res) => {
      const { user } = await signedIn(deps, req);
      const { file } = await checkedFile(req, 'avatar', IMAGE_TYPES);
      // The client crops to a square; the server makes sure: 512 x 512, re-encoded.
      const data = await reencode(file.buffer, { width: 512, height: 512, fit: 'cover' });
      const key = newKey('avatars', 'webp');
      // The row lock makes concurrent uploads take turns, so each one removes the avatar it replaced.
      const previous = await storeThenSave(deps, key, data, 'image/webp', () =>
        deps.db.transaction().execute(async (trx) => {
          const previous = await trx.selectFrom('users').select('avatar_key').where('id', '=', user.id).forUpdate().executeTakeFirstOrThrow();
          await trx.updateTable('users').set({ avatar_key: key, avatar_updated_at: new Date(), updated_at: new Date() }).where('id', '=', user.id).execute();
          return previous;
        }),
      );
      if (previous.avatar_key) await removeObject(deps, previous.avatar_key, 'replaced file');
      res.status(201).json({ avatarUrl: `/users/${user.id}/avatar`, contentType: 'image/webp', width: 512, height: 512, size: data.length });
    }),
  );

  routes.get(
    '/users/:userId/avatar',
    asyncRoute(async (req, res) => {
      const { user, memberships } = await signedIn(deps, req);
      const userId = String(req.params.userId);
      // Your own avatar, and those of people you share a workspace with (platform admins see all).
      const visible =
        isUuid(userId) &&
        (userId === user.id ||
          user.platform_role !== 'USER' ||
          (memberships.length > 0 &&
            Boolean(
              await deps.db
                .selectFrom('workspace_members')
                .select('user_id')
                .where('user_id', '=', userId)
                .where('workspace_id', 'in', memberships.map((m) => m.id))
                .executeTakeFirst(),
            )));
      const row = visible ? await deps.db.selectFrom('users').select('avatar_key').where('id', '=', userId).executeTakeFirst() : undefined;
      const data = row?.avatar_key ? await deps.storage.get(row.avatar_key) : undefined;
      if (!data) throw new AppError('NOT_FOUND', 'No avatar.');
      res.setHeader('Content-Type', 'image/webp');
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Cache-Control', 'private, max-age=300');
      res.end(data);
    }),
  );

  routes.post(
    '/workspaces/:workspaceId/branding/logo',
    requireMultipart('logo'),
    authenticateFirst(deps, 'branding.manage', (req) => req.params.workspaceId),
    singleFile('logo', 1 * MiB),
    asyncRoute(async (req, res) => {
      const principal = await signedIn(deps, req);
      const { user } = principal;
      const workspace = workspaceFor(deps, req, principal, 'branding.manage', req.params.workspaceId);
      const { file } = await checkedFile(req, 'logo', IMAGE_TYPES);
      const data = await reencode(file.buffer, { width: 1024, height: 1024, fit: 'inside', withoutEnlargement: true });
      const key = newKey('logos', 'webp');
      const { row, replaced } = await storeThenSave(deps, key, data, 'image/webp', () =>
        deps.db.transaction().execute(async (trx) => {
          const previous = await trx.selectFrom('workspaces').select('logo_file_id').where('id', '=', workspace.id).forUpdate().executeTakeFirstOrThrow();
          const row = await trx
            .insertInto('files')
            .values({ workspace_id: workspace.id, uploaded_by: user.id, kind: 'logo', storage_key: key, content_type: 'image/webp', size_bytes: data.length, original_name: 'logo.webp' })
            .returningAll()
            .executeTakeFirstOrThrow();
          await trx.updateTable('workspaces').set({ logo_file_id: row.id, updated_at: new Date() }).where('id', '=', workspace.id).execute();
          // The previous logo goes with its replacement: its row now, its object after the commit.
          const replaced = previous.logo_file_id
            ? await trx.deleteFrom('files').where('id', '=', previous.logo_file_id).where('kind', '=', 'logo').returning('storage_key').executeTakeFirst()
            : undefined;
          return { row, replaced };
        }),
      );
      if (replaced) await removeObject(deps, replaced.storage_key, 'replaced file');
      res.status(200).json({ logoUrl: `/storage/files/${row.id}`, contentType: 'image/webp', size: row.size_bytes });
    }),
  );

  return routes;
}

const multipart = (field: string, description: string) => ({
  required: true,
  content: {
    'multipart/form-data': {
      schema: { type: 'object' as const, required: [field], properties: { [field]: { type: 'string' as const, format: 'binary', description } } },
    },
  },
});
const secured = { security: [{ bearerAuth: [] }] };
/** Who may upload or download: a valid access token of an ACTIVE user (the route's 403 adds its own codes). */
const signedInRefusals = {
  401: errorResponse('No valid access token', ['UNAUTHORIZED']),
  403: errorResponse('The account is suspended', ['USER_SUSPENDED']),
};
/** A workspace's upload: a member of an ACTIVE workspace holding the route's permission. */
const workspaceRefusals = {
  403: errorResponse('The account is suspended, the workspace is not ACTIVE, or the role lacks the permission', ['PERMISSION_DENIED', 'USER_SUSPENDED', 'WORKSPACE_UNAVAILABLE']),
  404: errorResponse('No such workspace among mine', ['NOT_FOUND']),
};
const storageFailures = {
  502: errorResponse('The storage provider failed (nothing was saved)', ['STORAGE_PROVIDER_ERROR']),
  503: errorResponse('The selected storage provider lacks its settings', ['STORAGE_NOT_CONFIGURED']),
};
const refusals = {
  ...signedInRefusals,
  400: errorResponse('Missing or unreadable file', ['BAD_REQUEST']),
  413: errorResponse('File too large', ['PAYLOAD_TOO_LARGE']),
  415: errorResponse('Not multipart, sent with a Content-Encoding, or a type not accepted (checked by content)', [
    'UNSUPPORTED_MEDIA_TYPE',
  ]),
  ...storageFailures,
};

export const uploadOpenApiPaths: ZodOpenApiPathsObject = {
  '/storage/upload': {
    post: {
      'x-rate-limit-tier': 'upload',
      operationId: 'storage-upload',
      summary: 'Upload a file (field file, 10 MiB; images, GIF or PDF by content) to a workspace',
      tags: ['Storage'],
      ...secured,
      requestBody: multipart('file', 'The file. workspaceId may be sent as a form field or query parameter (default: the active workspace).'),
      responses: { 201: { description: 'Stored: id, workspaceId, contentType, size, url' }, ...refusals, ...workspaceRefusals },
    },
  },
  '/profile/avatar': {
    post: {
      'x-rate-limit-tier': 'upload',
      operationId: 'profile-avatar',
      summary: 'Set my avatar (field avatar, PNG/JPEG/WebP, 2 MiB; stored as a 512 x 512 WebP)',
      tags: ['Profile'],
      ...secured,
      requestBody: multipart('avatar', 'PNG, JPEG or WebP, at most 2 MiB'),
      responses: { 201: { description: 'Stored: avatarUrl' }, ...refusals },
    },
  },
  '/workspaces/{workspaceId}/branding/logo': {
    post: {
      'x-rate-limit-tier': 'upload',
      operationId: 'workspace-branding-logo',
      summary: 'Set the workspace logo (field logo, PNG/JPEG/WebP, 1 MiB, no SVG)',
      tags: ['Workspaces'],
      ...secured,
      parameters: [{ in: 'path', name: 'workspaceId', required: true, schema: { type: 'string', format: 'uuid' } }],
      requestBody: multipart('logo', 'PNG, JPEG or WebP, at most 1 MiB'),
      responses: { 200: { description: 'Stored: logoUrl' }, ...refusals, ...workspaceRefusals },
    },
  },
  '/storage/files/{fileId}': {
    get: {
      operationId: 'storage-file',
      summary: 'Download a file of one of my workspaces',
      tags: ['Storage'],
      ...secured,
      parameters: [{ in: 'path', name: 'fileId', required: true, schema: { type: 'string', format: 'uuid' } }],
      responses: {
        200: { description: 'The file, with X-Content-Type-Options: nosniff' },
        401: errorResponse('No valid access token (whether or not the file exists)', ['UNAUTHORIZED']),
        403: errorResponse("The account is suspended, or the file's workspace is not ACTIVE (told to its members only)", ['USER_SUSPENDED', 'WORKSPACE_UNAVAILABLE']),
        404: errorResponse('No such file in my workspaces', ['NOT_FOUND']),
        ...storageFailures,
      },
    },
  },
  '/users/{userId}/avatar': {
    get: {
      operationId: 'user-avatar',
      summary: "A user's avatar (WebP)",
      tags: ['Profile'],
      ...secured,
      parameters: [{ in: 'path', name: 'userId', required: true, schema: { type: 'string', format: 'uuid' } }],
      responses: { 200: { description: 'image/webp' }, ...signedInRefusals, 404: errorResponse('No avatar', ['NOT_FOUND']), ...storageFailures },
    },
  },
};
