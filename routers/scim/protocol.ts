// /scim/v2 (RFC 7643, 7644): a plain Express router, not OpenAPI procedures, because the protocol has
// its own error shape and media type. `Authorization: Bearer scim_...` names the workspace; bodies are
// application/scim+json (application/json accepted), at most 1 MiB. Documented in docs/api.md.
import express, { type NextFunction, type Request, type Response } from 'express';
import { actorOf } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError, ERROR_STATUS } from '../../server/platform/errors.js';
import { isDatabaseUnavailable } from '../../db/errors.js';
import { clientAddress } from '../../server/platform/client-address.js';
import { bearerToken } from '../../server/platform/security/jwt.js';
import { JSON_BODY_LIMIT_BYTES, refuseTrailingBytes } from '../../server/platform/request-body.js';
import { ScimError } from './errors.js';
import * as groups from './groups.js';
import { listResponse, paging, resourceTypes, schemas, serviceProviderConfig } from './resources.js';
import { authenticateScimToken } from './tokens.js';
import * as users from './users.js';
import type { ScimCaller } from './users.js';

export const SCIM_BASE_PATH = '/scim/v2';
const MEDIA_TYPE = 'application/scim+json';
const JSON_TYPES = [MEDIA_TYPE, 'application/json'];

type Deps = Pick<AppDeps, 'db' | 'config' | 'logger'>;

function send(res: Response, status: number, body?: unknown) {
  res.status(status);
  if (body === undefined) return void res.end();
  res.type(MEDIA_TYPE).send(JSON.stringify(body));
}

const callerOf = (res: Response) => res.locals.scim as ScimCaller;

/** A handler whose failures go to the SCIM error handler. */
const handle =
  (fn: (req: Request, res: Response) => Promise<void> | void) => (req: Request, res: Response, next: NextFunction) =>
    Promise.resolve()
      .then(() => fn(req, res))
      .catch(next);

const queryText = (req: Request, name: string) => {
  const value = req.query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new ScimError(400, `${name} is given once, as text.`, 'invalidValue');
  return value;
};

/** `excludedAttributes=members` (Okta and Entra ask for groups without their members). */
const withoutMembers = (req: Request) =>
  (queryText(req, 'excludedAttributes') ?? '').split(',').some((a) => a.trim().toLowerCase() === 'members');

export function scimRoutes(deps: Deps): express.Router {
  const r = express.Router();

  // Who calls: the token's workspace; anything else is a 401 in SCIM's shape.
  r.use((req, res, next) => {
    authenticateScimToken(deps, bearerToken(req.headers.authorization) ?? undefined).then((token) => {
      if (!token) {
        res.setHeader('WWW-Authenticate', 'Bearer realm="scim"');
        return next(new ScimError(401, 'Send a valid SCIM token: Authorization: Bearer scim_...'));
      }
      const base = deps.config.API_URL ?? `${req.protocol}://${req.get('host') ?? 'localhost'}`;
      res.locals.scim = {
        workspaceId: token.workspaceId,
        baseUrl: base.replace(/\/$/, ''),
        actor: actorOf({
          requestId: req.id,
          ip: clientAddress(req) ?? null,
          userAgent: req.headers['user-agent'] ?? null,
          scimToken: { id: token.id },
        }),
      } satisfies ScimCaller;
      next();
    }, next);
  });

  // Bodies: SCIM's media type or JSON; anything else is a 415.
  r.use((req, _res, next) => {
    if (req.method === 'GET' || req.method === 'DELETE' || !req.headers['content-type']) return next();
    if (!req.is(JSON_TYPES)) return next(new ScimError(415, `Send the body as ${MEDIA_TYPE}.`));
    next();
  });
  r.use(refuseTrailingBytes(express.json({ type: JSON_TYPES, limit: JSON_BODY_LIMIT_BYTES, strict: true })));

  r.get(
    '/ServiceProviderConfig',
    handle((_req, res) => send(res, 200, serviceProviderConfig(callerOf(res).baseUrl))),
  );
  // The discovery lists (RFC 7644 4): each listed whole, and one by its id.
  const discovery = (path: string, all: (baseUrl: string) => Array<{ id: string }>, missing: string) => {
    r.get(
      path,
      handle((_req, res) => {
        const items = all(callerOf(res).baseUrl);
        send(res, 200, listResponse(items, items.length, 1));
      }),
    );
    r.get(
      `${path}/:id`,
      handle((req, res) => {
        const found = all(callerOf(res).baseUrl).find((item) => item.id === req.params.id);
        if (!found) throw new ScimError(404, missing);
        send(res, 200, found);
      }),
    );
  };
  discovery('/ResourceTypes', resourceTypes, 'No such resource type.');
  discovery('/Schemas', schemas, 'No such schema.');

  r.get(
    '/Users',
    handle(async (req, res) =>
      send(
        res,
        200,
        await users.listUsers(deps, callerOf(res), { filter: queryText(req, 'filter'), ...paging(req.query) }),
      ),
    ),
  );
  r.post(
    '/Users',
    handle(async (req, res) => send(res, 201, await users.createUser(deps, callerOf(res), req.body))),
  );
  r.get(
    '/Users/:id',
    handle(async (req, res) => send(res, 200, await users.getUser(deps, callerOf(res), req.params.id as string))),
  );
  r.put(
    '/Users/:id',
    handle(async (req, res) =>
      send(res, 200, await users.replaceUser(deps, callerOf(res), req.params.id as string, req.body)),
    ),
  );
  r.patch(
    '/Users/:id',
    handle(async (req, res) =>
      send(res, 200, await users.patchUser(deps, callerOf(res), req.params.id as string, req.body)),
    ),
  );
  r.delete(
    '/Users/:id',
    handle(async (req, res) => {
      await users.deleteUser(deps, callerOf(res), req.params.id as string);
      send(res, 204);
    }),
  );

  r.get(
    '/Groups',
    handle(async (req, res) =>
      send(
        res,
        200,
        await groups.listGroups(deps, callerOf(res), {
          filter: queryText(req, 'filter'),
          ...paging(req.query),
          withMembers: !withoutMembers(req),
        }),
      ),
    ),
  );
  r.post(
    '/Groups',
    handle(async (req, res) => send(res, 201, await groups.createGroup(deps, callerOf(res), req.body))),
  );
  r.get(
    '/Groups/:id',
    handle(async (req, res) =>
      send(res, 200, await groups.getGroup(deps, callerOf(res), req.params.id as string, !withoutMembers(req))),
    ),
  );
  r.put(
    '/Groups/:id',
    handle(async (req, res) =>
      send(res, 200, await groups.replaceGroup(deps, callerOf(res), req.params.id as string, req.body)),
    ),
  );
  r.patch(
    '/Groups/:id',
    handle(async (req, res) =>
      send(res, 200, await groups.patchGroup(deps, callerOf(res), req.params.id as string, req.body)),
    ),
  );
  r.delete(
    '/Groups/:id',
    handle(async (req, res) => {
      await groups.deleteGroup(deps, callerOf(res), req.params.id as string);
      send(res, 204);
    }),
  );

  r.use((req, _res, next) => next(new ScimError(404, `No SCIM endpoint ${req.method} ${req.path}.`)));
  r.use(scimErrorHandler(deps));
  return r;
}

/** Every failure of /scim/v2 in SCIM's error shape; a bug is a 500 without details, logged. */
function scimErrorHandler(deps: Deps) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    let error: ScimError;
    if (err instanceof ScimError) error = err;
    else if (err instanceof AppError)
      error = new ScimError(ERROR_STATUS[err.code], err.message, err.status === 400 ? 'invalidValue' : undefined);
    else if (isBodyError(err)) error = bodyError(err);
    else if (isDatabaseUnavailable(err)) {
      res.setHeader('Retry-After', '5');
      error = new ScimError(503, 'The service is unavailable for a moment; try again.');
    } else {
      deps.logger.error({ err, requestId: req.id }, 'SCIM request failed');
      error = new ScimError(500, 'Something went wrong on our side. Please try again in a moment.');
    }
    send(res, error.status, error.body());
  };
}

const isBodyError = (err: unknown): err is { status: number; type?: string } =>
  typeof err === 'object' && err !== null && typeof (err as { status?: unknown }).status === 'number';

function bodyError(err: { status: number; type?: string }) {
  if (err.status === 413) return new ScimError(413, 'The body is over 1 MiB.');
  if (err.status === 415) return new ScimError(415, 'This Content-Encoding or charset is not accepted.');
  return new ScimError(400, 'The body is not valid JSON.', 'invalidSyntax');
}
