// The public API's answers: the API key making the call (as its request authenticated it) and the key's
// workspace. Neither depends on anything but the key, so neither takes an actor.
import type { AppDeps } from '../../server/platform/context.js';
import type { ApiKeyPrincipal } from '../../server/platform/principal.js';
import { loadWorkspace } from '../workspaces/service.js';

/** The key and its workspace's name, as the request's authentication found them. */
export function describeKey({ apiKey }: { apiKey: ApiKeyPrincipal }) {
  return {
    apiKey: {
      id: apiKey.id,
      name: apiKey.name,
      prefix: apiKey.prefix,
      scopes: apiKey.scopes,
      expiresAt: apiKey.expires_at?.toISOString() ?? null,
    },
    workspace: { id: apiKey.workspace_id, name: apiKey.workspace_name },
  };
}

/** The key's workspace as clients see it (not deleted). */
export function keyWorkspace({ db }: Pick<AppDeps, 'db'>, { workspaceId }: { workspaceId: string }) {
  return loadWorkspace(db, workspaceId);
}
