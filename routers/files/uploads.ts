// Multipart uploads, as plain Express routes (trpc-to-openapi refuses multipart), documented in
// /openapi.json through uploadOpenApiPaths: workspace files (field `file`, 10 MiB), avatars (`avatar`,
// 2 MiB) and workspace logos (`logo`, 1 MiB). The handlers read the form and decide who may call; what is
// stored, and how, is the service's (service.ts). Files are served back with nosniff.
import express, { Router, type Request, type RequestHandler } from 'express';
import type multerModule from 'multer';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { actorOf, type Actor } from '../../server/platform/actor.js';
import { requestMeta, type AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { resolveWorkspaceAccess } from '../../server/platform/access.js';
import type { WorkspacePermission } from '../../server/platform/permissions.js';
import { noteRequest } from '../../server/platform/monitoring.js';
import { authenticateRequest } from '../../server/platform/trpc.js';
import type { Principal } from '../auth/sessions.js';
import type { WorkspaceAccess } from '../workspaces/access.js';
import { errorResponse } from '../../server/platform/error-response.js';
import { refuseContentEncoding, refuseDeclaredLength } from '../../server/platform/request-body.js';
import {
  MiB,
  UPLOAD_LIMITS,
  avatarOf,
  findFile,
  readFile,
  setAvatar,
  setLogo,
  storeUpload,
  type Upload,
} from './service.js';
import { avatarOutput, logoOutput, storedFileOutput } from './schemas.js';

type Deps = Pick<AppDeps, 'db' | 'config' | 'storage' | 'logger' | 'auth' | 'imageWork'>;

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
  let upload: RequestHandler | undefined;
  const tooLarge = `The request is larger than a file of ${maxBytes / MiB} MiB (the limit) and its form fields.`;
  return [
    refuseDeclaredLength(maxBytes + FORM_ALLOWANCE_BYTES, tooLarge),
    (req, res, next) => {
      loadMulter().then((multer) => {
        upload ??= multer({
          storage: multer.memoryStorage(),
          preservePath: true,
          limits: { fileSize: maxBytes, files: 1, fields: 10, fieldSize: 1024 },
        }).single(field);
        upload(req, res, (err: unknown) => {
          if (!err) return next();
          if (err instanceof multer.MulterError) {
            if (err.code === 'LIMIT_FILE_SIZE') {
              return next(new AppError('PAYLOAD_TOO_LARGE', `The file is larger than ${maxBytes / MiB} MiB.`));
            }
            return next(new AppError('BAD_REQUEST', `Send one file in the multipart field "${field}".`));
          }
          return next(new AppError('BAD_REQUEST', 'Send the file as multipart/form-data.'));
        });
      }, next);
    },
  ];
}

/** multer is loaded by the first upload, not at start-up. */
let multerLoaded: Promise<typeof multerModule> | undefined;
const loadMulter = () => (multerLoaded ??= import('multer').then((m) => m.default));

/** Uploads are read as sent: multer does not decode a Content-Encoding, and images and PDF are compressed. */
const refuseEncodedBody = refuseContentEncoding([]);

function requireMultipart(field: string): RequestHandler {
  return (req, res, next) => {
    if (!req.is('multipart/form-data'))
      return next(
        new AppError('UNSUPPORTED_MEDIA_TYPE', `Send multipart/form-data with the file in the field "${field}".`),
      );
    refuseEncodedBody(req, res, next);
  };
}

/** The file multer read from `field`; its content is checked by the service. */
function fileOf(req: Request, field: string): Upload {
  const file = req.file;
  if (!file || file.fieldname !== field)
    throw new AppError('BAD_REQUEST', `Send one file in the multipart field "${field}".`);
  return file;
}

/** The signed-in caller (401 without a valid token, 403 USER_SUSPENDED). */
async function signedIn(deps: Deps, req: Request): Promise<Principal> {
  const principal = await authenticateRequest(deps, req);
  noteRequest(req, { userId: principal.user.id });
  return principal;
}

/** Who acts in a request: the signed-in caller, from this request's address and session. */
const actorOfRequest = (req: Request, principal: Principal): Actor =>
  actorOf({ ...requestMeta(req), user: principal.user, sessionId: principal.sessionId });

/** The workspace `workspaceId` names (default: the active one), checked for `permission`. */
function workspaceFor(
  deps: Deps,
  req: Request,
  principal: Principal,
  permission: WorkspacePermission,
  workspaceId: unknown,
): WorkspaceAccess {
  const workspace = resolveWorkspaceAccess(
    { email: principal.user.email, mfaEnabled: principal.user.mfa_enabled, memberships: principal.memberships },
    workspaceId,
    permission,
    {
      orActiveWorkspace: true,
      config: deps.config,
    },
  );
  noteRequest(req, { workspaceId: workspace.id });
  return workspace;
}

/**
 * Authenticates, and checks `permission` on the workspace `workspaceIdOf` names (when it names one), before
 * multer reads the body: a refused caller is answered at once, instead of after the server has buffered up
 * to 10 MiB of their upload. The handler asks signedIn again, which answers the same stored lookup.
 */
function authenticateFirst(
  deps: Deps,
  permission?: WorkspacePermission,
  workspaceIdOf?: (req: Request) => unknown,
): RequestHandler {
  return (req, _res, next) =>
    void (async () => {
      const principal = await signedIn(deps, req);
      const workspaceId = workspaceIdOf?.(req);
      if (permission && workspaceId !== undefined && workspaceId !== '')
        workspaceFor(deps, req, principal, permission, workspaceId);
    })().then(() => next(), next);
}

const asyncRoute =
  (fn: (req: Request, res: express.Response) => Promise<void>): RequestHandler =>
  (req, res, next) =>
    void fn(req, res).catch(next);

export function uploadRoutes(deps: Deps): Router {
  const routes = Router();

  routes.post(
    '/storage/upload',
    requireMultipart('file'),
    // A workspaceId in the query is checked before the body is read; one in the form only after it.
    authenticateFirst(deps, 'files.write', (req) => req.query.workspaceId),
    singleFile('file', UPLOAD_LIMITS.file),
    asyncRoute(async (req, res) => {
      const principal = await signedIn(deps, req);
      const workspace = workspaceFor(
        deps,
        req,
        principal,
        'files.write',
        (req.body as { workspaceId?: unknown } | undefined)?.workspaceId ?? req.query.workspaceId,
      );
      const stored = await storeUpload(deps, actorOfRequest(req, principal), {
        workspaceId: workspace.id,
        upload: fileOf(req, 'file'),
      });
      res.status(201).json(stored);
    }),
  );

  routes.get(
    '/storage/files/:fileId',
    asyncRoute(async (req, res) => {
      // Signed in before the lookup, so an anonymous caller gets 401 whether or not the file exists.
      const principal = await signedIn(deps, req);
      const file = await findFile(deps, { fileId: String(req.params.fileId) });
      // Members of the file's workspace only: others learn nothing (the 404 of a missing file). Its members
      // are told when the workspace is not ACTIVE (WORKSPACE_UNAVAILABLE), as on its other routes.
      try {
        workspaceFor(deps, req, principal, 'files.read', file.workspace_id);
      } catch (err) {
        throw err instanceof AppError && err.code === 'NOT_FOUND' ? new AppError('NOT_FOUND', 'File not found.') : err;
      }
      const { data, contentType, inline } = await readFile(deps, file);
      res.setHeader('Content-Type', contentType);
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
      res.setHeader('Content-Disposition', `${inline ? 'inline' : 'attachment'}; filename="${file.id}"`);
      res.setHeader('Cache-Control', 'private, max-age=300');
      res.end(data);
    }),
  );

  routes.post(
    '/profile/avatar',
    requireMultipart('avatar'),
    authenticateFirst(deps),
    singleFile('avatar', UPLOAD_LIMITS.avatar),
    asyncRoute(async (req, res) => {
      const principal = await signedIn(deps, req);
      res.status(201).json(await setAvatar(deps, actorOfRequest(req, principal), { upload: fileOf(req, 'avatar') }));
    }),
  );

  routes.get(
    '/users/:userId/avatar',
    asyncRoute(async (req, res) => {
      const principal = await signedIn(deps, req);
      const data = await avatarOf(deps, actorOfRequest(req, principal), {
        userId: String(req.params.userId),
        callerPlatformRole: principal.user.platform_role,
        memberships: principal.memberships,
      });
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
    singleFile('logo', UPLOAD_LIMITS.logo),
    asyncRoute(async (req, res) => {
      const principal = await signedIn(deps, req);
      const workspace = workspaceFor(deps, req, principal, 'branding.manage', req.params.workspaceId);
      const logo = await setLogo(deps, actorOfRequest(req, principal), {
        workspaceId: workspace.id,
        upload: fileOf(req, 'logo'),
      });
      res.status(200).json(logo);
    }),
  );

  return routes;
}

const multipart = (
  field: keyof typeof UPLOAD_LIMITS,
  description: string,
  extra: Record<string, { type: 'string'; format: string; description: string }> = {},
) => ({
  required: true,
  content: {
    'multipart/form-data': {
      schema: {
        type: 'object' as const,
        required: [field],
        properties: {
          [field]: { type: 'string' as const, format: 'binary', maxLength: UPLOAD_LIMITS[field], description },
          ...extra,
        },
      },
    },
  },
});
const json = (schema: unknown) => ({ 'application/json': { schema } });
/** Bytes as stored, of the types a route serves. */
const bytes = (types: string[]) =>
  Object.fromEntries(types.map((type) => [type, { schema: { type: 'string', format: 'binary' } }]));
const uuidParameter = (where: 'path' | 'query', name: string, description?: string) => ({
  in: where,
  name,
  required: where === 'path',
  ...(description ? { description } : {}),
  schema: { type: 'string' as const, format: 'uuid' },
});
const secured = { security: [{ bearerAuth: [] }] };
/** Who may upload or download: a valid access token of an ACTIVE user (the route's 403 adds its own codes). */
const signedInRefusals = {
  401: errorResponse('No valid access token', ['UNAUTHORIZED']),
  403: errorResponse('The account is suspended', ['USER_SUSPENDED']),
};
/** A workspace's upload: a member of an ACTIVE workspace holding the route's permission. */
const workspaceRefusals = {
  403: errorResponse(
    'The account is suspended, the workspace is not ACTIVE, requires two-factor sign-in the caller lacks, or the role lacks the permission',
    ['MEMBERSHIP_SUSPENDED', 'MFA_REQUIRED', 'PERMISSION_DENIED', 'USER_SUSPENDED', 'WORKSPACE_UNAVAILABLE'],
  ),
  404: errorResponse('No such workspace among mine', ['NOT_FOUND']),
};
const storageFailures = {
  502: errorResponse('The storage provider failed (nothing was saved)', ['STORAGE_PROVIDER_ERROR']),
  503: errorResponse('The selected storage provider lacks its settings', ['STORAGE_NOT_CONFIGURED']),
};
const refusals = {
  ...signedInRefusals,
  400: errorResponse(
    'Missing or unreadable file, or an image too large to decode (over 40 megapixels a frame, 1,000 frames or 100 megapixels in all)',
    ['BAD_REQUEST'],
  ),
  413: errorResponse('File too large', ['PAYLOAD_TOO_LARGE']),
  415: errorResponse('Not multipart, sent with a Content-Encoding, or a type not accepted (checked by content)', [
    'UNSUPPORTED_MEDIA_TYPE',
  ]),
  ...storageFailures,
  503: errorResponse(
    'The selected storage provider lacks its settings, or too many images are being processed (with Retry-After)',
    ['SERVICE_UNAVAILABLE', 'STORAGE_NOT_CONFIGURED'],
  ),
};

export const uploadOpenApiPaths: ZodOpenApiPathsObject = {
  '/storage/upload': {
    post: {
      'x-rate-limit-tier': 'upload',
      operationId: 'storage-upload',
      description:
        "Stores a file in a workspace, sent as multipart/form-data in the field `file`. The type is told by the content, not the name: PNG, JPEG, WebP and GIF images (re-encoded, metadata dropped) and PDF (as sent). Download it from the answer's `url`.\n\n**Who may call it:** a member of the workspace whose role grants files.write (OWNER, ADMIN or MEMBER).",
      summary: 'Upload a file (field file, 10 MiB; images, GIF or PDF by content) to a workspace',
      tags: ['Storage'],
      ...secured,
      parameters: [
        uuidParameter(
          'query',
          'workspaceId',
          'The workspace (or send it as a form field; default: the active workspace).',
        ),
      ],
      requestBody: multipart('file', 'The file: PNG, JPEG, WebP, GIF or PDF (told by its content), at most 10 MiB.', {
        workspaceId: { type: 'string', format: 'uuid', description: 'The workspace, if not in the query.' },
      }),
      responses: {
        201: { description: 'Stored', content: json(storedFileOutput) },
        ...refusals,
        ...workspaceRefusals,
      },
    },
  },
  '/profile/avatar': {
    post: {
      'x-rate-limit-tier': 'upload',
      operationId: 'profile-avatar',
      description:
        "Sets the caller's avatar from a PNG, JPEG or WebP image in the field `avatar`: cropped to 512 x 512 and stored as WebP. The previous avatar is removed.\n\n**Who may call it:** any signed-in user, for themselves.",
      summary: 'Set my avatar (field avatar, PNG/JPEG/WebP, 2 MiB; stored as a 512 x 512 WebP)',
      tags: ['Profile'],
      ...secured,
      requestBody: multipart('avatar', 'PNG, JPEG or WebP, at most 2 MiB'),
      responses: { 201: { description: 'Stored', content: json(avatarOutput) }, ...refusals },
    },
  },
  '/workspaces/{workspaceId}/branding/logo': {
    post: {
      'x-rate-limit-tier': 'upload',
      operationId: 'workspace-branding-logo',
      description:
        'Sets the workspace logo from a PNG, JPEG or WebP image in the field `logo` (SVG is refused): scaled to fit 1024 x 1024 and stored as WebP. The previous logo is removed.\n\n**Who may call it:** a member of the workspace whose role grants branding.manage (OWNER or ADMIN).',
      summary: 'Set the workspace logo (field logo, PNG/JPEG/WebP, 1 MiB, no SVG)',
      tags: ['Workspaces'],
      ...secured,
      parameters: [uuidParameter('path', 'workspaceId')],
      requestBody: multipart('logo', 'PNG, JPEG or WebP, at most 1 MiB'),
      responses: { 200: { description: 'Stored', content: json(logoOutput) }, ...refusals, ...workspaceRefusals },
    },
  },
  '/storage/files/{fileId}': {
    get: {
      operationId: 'storage-file',
      description:
        "The bytes of a stored file, with its type and X-Content-Type-Options: nosniff; images are shown inline, PDF is an attachment.\n\n**Who may call it:** a member of the file's workspace (files.read: any role). A file of another workspace is 404, as one that does not exist.",
      summary: 'Download a file of one of my workspaces',
      tags: ['Storage'],
      ...secured,
      parameters: [uuidParameter('path', 'fileId')],
      responses: {
        200: {
          description: 'The file, with X-Content-Type-Options: nosniff (images inline, PDF as an attachment)',
          content: bytes(['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/pdf']),
        },
        401: errorResponse('No valid access token (whether or not the file exists)', ['UNAUTHORIZED']),
        403: errorResponse(
          "The account is suspended, or the file's workspace is not ACTIVE (told to its members only)",
          ['USER_SUSPENDED', 'WORKSPACE_UNAVAILABLE'],
        ),
        404: errorResponse('No such file in my workspaces', ['NOT_FOUND']),
        ...storageFailures,
      },
    },
  },
  '/users/{userId}/avatar': {
    get: {
      operationId: 'user-avatar',
      description:
        "A user's avatar as WebP (cached privately for 5 minutes).\n\n**Who may call it:** the user, members of a workspace they share, and platform admins; anyone else gets 404, as for a user without an avatar.",
      summary: "A user's avatar (WebP)",
      tags: ['Profile'],
      ...secured,
      parameters: [uuidParameter('path', 'userId')],
      responses: {
        200: { description: 'The avatar, 512 x 512', content: bytes(['image/webp']) },
        ...signedInRefusals,
        404: errorResponse('No avatar', ['NOT_FOUND']),
        ...storageFailures,
      },
    },
  },
};
