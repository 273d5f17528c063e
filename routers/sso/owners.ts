// The owners of a workspace hear of every change of its sign-in set-up (domains, connections, SCIM tokens):
// a connection can sign in any address of the workspace's domains, owners included.
import type { AppDeps } from '../../server/platform/context.js';
import { sendAfterCommit } from '../../server/platform/email/mailer.js';
import { signInSetupChangedMail } from '../../server/platform/email/templates.js';

export async function mailOwners(
  deps: Pick<AppDeps, 'db' | 'config' | 'mailer' | 'logger'>,
  workspaceId: string,
  change: string,
) {
  const owners = await deps.db
    .selectFrom('workspace_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .innerJoin('workspaces as w', 'w.id', 'm.workspace_id')
    .select(['u.email', 'w.name'])
    .where('m.workspace_id', '=', workspaceId)
    .where('m.role', '=', 'OWNER')
    .execute();
  for (const { email, name } of owners)
    await sendAfterCommit(
      deps,
      signInSetupChangedMail({ to: email, workspaceName: name, change, appUrl: deps.config.APP_URL }),
    );
}
