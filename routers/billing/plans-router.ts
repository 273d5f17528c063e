// The public plan catalog and the admin plan routes, with the read-only billing settings.
import { z } from 'zod';
import { adminProcedure, adminWriteProcedure, publicProcedure, router } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
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

const move = (name: 'archive' | 'restore', summary: string, description: string) =>
  adminWriteProcedure
    .meta({
      openapi: { method: 'POST', path: `/admin/billing/plans/{planId}/${name}`, tags, summary, description },
      errors: ['INVALID_STATE', 'PLAN_NOT_FOUND'],
    })
    .input(planIdInput)
    .output(planOutput)
    .mutation(({ ctx, input }) => plans.movePlan(ctx, actorOf(ctx), { ...input, move: name }));

export const plansRouter = router({
  catalog: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/billing/plans',
        description: 'The published plans, in display order, with prices and limits. Public and cached.',
        tags: ['Billing'],
        protect: false,
        summary: 'Published plans, by sort order',
      },
    })
    .input(z.void())
    .output(planListOutput)
    .query(({ ctx }) => plans.publishedPlans(ctx)),

  list: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/billing/plans',
        description: 'Every plan, drafts and archived ones included.',
        tags,
        summary: 'Every plan, drafts and archived included',
      },
    })
    .input(z.void())
    .output(planListOutput)
    .query(({ ctx }) => plans.listAllPlans(ctx)),

  get: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/billing/plans/{planId}',
        description: 'One plan, whatever its status.',
        tags,
        summary: 'One plan',
      },
      errors: ['PLAN_NOT_FOUND'],
    })
    .input(planIdInput)
    .output(planOutput)
    .query(({ ctx, input }) => plans.getPlan(ctx, input)),

  create: adminWriteProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/admin/billing/plans',
        description:
          'Creates a plan (slug unique, price in cents of 0 or more). A plan is shown in GET /billing/plans once published.',
        tags,
        summary: 'Create a plan (unique slug, price in cents >= 0)',
      },
      errors: ['CONFLICT'],
      successStatus: 201,
    })
    .input(createPlanInput)
    .output(planOutput)
    .mutation(({ ctx, input }) => plans.createPlan(ctx, actorOf(ctx), input)),

  update: adminWriteProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/admin/billing/plans/{planId}',
        description: 'Changes a plan (slug unique: 409 CONFLICT otherwise).',
        tags,
        summary: 'Change a plan',
      },
      errors: ['CONFLICT', 'INVALID_STATE', 'PLAN_NOT_FOUND'],
    })
    .input(updatePlanInput)
    .output(planOutput)
    .mutation(({ ctx, input }) => plans.updatePlan(ctx, actorOf(ctx), input)),

  archive: move(
    'archive',
    'Archive a plan (hidden, kept for history)',
    'Archives a plan: hidden from GET /billing/plans and from checkout; subscriptions on it keep it.',
  ),
  restore: move(
    'restore',
    'Restore an archived plan to the status it had',
    'Restores an archived plan to the status it had before.',
  ),

  delete: adminWriteProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/admin/billing/plans/{planId}',
        description: 'Deletes a plan no subscription has ever used; archive it otherwise (409 CONFLICT).',
        tags,
        summary: 'Delete a plan no subscription uses',
      },
      errors: ['INVALID_STATE', 'PLAN_HAS_SUBSCRIPTIONS', 'PLAN_NOT_FOUND'],
    })
    .input(planIdInput)
    .output(z.object({ message: z.string() }))
    .mutation(({ ctx, input }) => plans.deletePlan(ctx, actorOf(ctx), input)),

  settings: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/billing/settings',
        description: 'The payment settings this instance runs with, without any secret (only whether each is set).',
        tags,
        summary: 'Payment settings, secret-safe',
      },
    })
    .input(z.void())
    .output(billingSettingsOutput)
    .query(({ ctx }) => billingSettings(ctx)),

  updateSettings: adminWriteProcedure
    .meta({
      openapi: {
        method: 'PATCH',
        path: '/admin/billing/settings',
        description: 'Always refused: payment settings come from the environment (see docs/configuration.md).',
        tags,
        summary: 'Read-only: settings come from the environment',
      },
      errors: ['SETTINGS_READ_ONLY'],
    })
    .input(
      z
        .looseObject({})
        .refine((o) => Object.keys(o).length <= 100, { error: 'At most 100 settings.' })
        .meta({
          description: 'Ignored: the change is refused whatever it is.',
          override: { type: 'object', maxProperties: 100 },
        }),
    )
    .output(billingSettingsOutput)
    .mutation(() => refuseSettingsChange()),
});
