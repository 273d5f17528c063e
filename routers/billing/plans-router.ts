// The public plan catalog and the admin plan routes, with the read-only billing settings.
import { z } from 'zod';
import { adminProcedure, adminWriteProcedure, publicProcedure, router } from '../../server/platform/trpc.js';
import { actorOf } from '../audit/service.js';
import * as plans from './plans.js';
import {
  billingSettingsOutput,
  createPlanInput,
  planIdInput,
  planListOutput,
  planOutput,
  updatePlanInput,
} from './schemas.js';
import { billingSettings, refuseSettingsChange } from './settings.js';

const tags = ['Admin: billing'];

const move = (name: 'archive' | 'restore', summary: string) =>
  adminWriteProcedure
    .meta({
      openapi: { method: 'POST', path: `/admin/billing/plans/{planId}/${name}`, tags, summary },
      errors: ['INVALID_STATE', 'PLAN_NOT_FOUND'],
    })
    .input(planIdInput)
    .output(planOutput)
    .mutation(({ ctx, input }) => plans.movePlan(ctx.db, ctx.plans, actorOf(ctx), input.planId, name));

export const plansRouter = router({
  catalog: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/billing/plans',
        tags: ['Billing'],
        protect: false,
        summary: 'Published plans, by sort order',
      },
    })
    .input(z.void())
    .output(planListOutput)
    .query(({ ctx }) => plans.publishedPlans(ctx.plans)),

  list: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/billing/plans',
        tags,
        summary: 'Every plan, drafts and archived included',
      },
    })
    .input(z.void())
    .output(planListOutput)
    .query(({ ctx }) => plans.listAllPlans(ctx.db)),

  get: adminProcedure
    .meta({
      openapi: { method: 'GET', path: '/admin/billing/plans/{planId}', tags, summary: 'One plan' },
      errors: ['PLAN_NOT_FOUND'],
    })
    .input(planIdInput)
    .output(planOutput)
    .query(({ ctx, input }) => plans.getPlan(ctx.db, input.planId)),

  create: adminWriteProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/billing/plans',
        tags,
        summary: 'Create a plan (unique slug, price in cents >= 0)',
      },
      errors: ['CONFLICT'],
      successStatus: 201,
    })
    .input(createPlanInput)
    .output(planOutput)
    .mutation(({ ctx, input }) => plans.createPlan(ctx.db, ctx.plans, actorOf(ctx), input)),

  update: adminWriteProcedure
    .meta({
      openapi: { method: 'PATCH', path: '/admin/billing/plans/{planId}', tags, summary: 'Change a plan' },
      errors: ['CONFLICT', 'INVALID_STATE', 'PLAN_NOT_FOUND'],
    })
    .input(updatePlanInput)
    .output(planOutput)
    .mutation(({ ctx, input: { planId, ...changes } }) =>
      plans.updatePlan(ctx.db, ctx.plans, actorOf(ctx), planId, changes),
    ),

  archive: move('archive', 'Archive a plan (hidden, kept for history)'),
  restore: move('restore', 'Restore an archived plan to the status it had'),

  delete: adminWriteProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/admin/billing/plans/{planId}',
        tags,
        summary: 'Delete a plan no subscription uses',
      },
      errors: ['INVALID_STATE', 'PLAN_HAS_SUBSCRIPTIONS', 'PLAN_NOT_FOUND'],
    })
    .input(planIdInput)
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx, input }) => plans.deletePlan(ctx.db, ctx.plans, actorOf(ctx), input.planId)),

  settings: adminProcedure
    .meta({
      openapi: { method: 'GET', path: '/admin/billing/settings', tags, summary: 'Payment settings, secret-safe' },
    })
    .input(z.void())
    .output(billingSettingsOutput)
    .query(({ ctx }) => billingSettings(ctx)),

  updateSettings: adminWriteProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/admin/billing/settings',
        tags,
        summary: 'Read-only: settings come from the environment',
      },
      errors: ['SETTINGS_READ_ONLY'],
    })
    .input(z.looseObject({}))
    .output(billingSettingsOutput)
    .mutation(() => refuseSettingsChange()),
});
