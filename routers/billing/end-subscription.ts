// Ending a workspace's subscription because the workspace goes (an owner deleted it, or the account of its
// only member was deleted): canceled at its processor so it is not charged again; none live is fine.
import type { Actor } from '../../server/platform/actor.js';
import type { Context } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { cancel } from './checkout.js';

/** A function of the workspace id, for the use cases that take one (lifecycle.ts, erasure.ts). */
export const subscriptionEnder = (ctx: Context, actor: Actor) => async (workspaceId: string) => {
  await cancel(ctx, actor, { workspaceId }).catch((err: unknown) => {
    if (!(err instanceof AppError && err.code === 'CONFLICT')) throw err;
  });
};
