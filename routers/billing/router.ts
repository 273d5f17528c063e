// Workspace billing: provider status, checkout, current plan, history, cancel, portal, and the legacy
// workspace billing routes the spec keeps for compatibility (same services, workspace in the path).
import { z } from 'zod';
import { publicProcedure, router, workspaceProcedure } from '../../server/platform/trpc.js';
import { actorOf } from '../../server/platform/actor.js';
import {
  checkoutInput,
  checkoutOutput,
  currentPlanOutput,
  historyInput,
  historyOutput,
  invoicesOutput,
  legacyCheckoutInput,
  legacyHistoryInput,
  legacyWorkspaceInput,
  portalOutput,
  providerStatusOutput,
  workspaceBillingInput,
} from './schemas.js';
import * as billing from './service.js';
import * as checkout from './checkout.js';
import * as invoices from './invoices.js';

const tags = ['Billing'];
const legacy = ['Billing (legacy)'];
const activeOrNamed = { orActiveWorkspace: true };

export const billingRouter = router({
  providerStatus: publicProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/billing/provider-status',
        description:
          'Which payment provider this instance uses (MOCK, PROCESSOR_A or PROCESSOR_B) and whether it is configured. No secret is in it.',
        tags,
        protect: false,
        summary: 'The active payment provider and whether it is configured',
      },
    })
    .input(z.void())
    .output(providerStatusOutput)
    .query(({ ctx }) => billing.providerStatus(ctx)),

  checkout: workspaceProcedure('billing.manage', activeOrNamed)
    .meta({
      openapi: {
        method: 'POST',
        path: '/billing/checkout',
        description:
          'Buys a plan for the workspace (workspaceId in the body, else the active workspace). With the MOCK provider the change is made at once and the answer carries the new current plan; with a payment processor the answer carries a checkoutUrl to send the customer to, and the plan changes when the processor confirms the payment.',
        tags,
        summary: 'Buy a plan: MOCK completes at once, processors answer checkoutUrl',
      },
      errors: ['BAD_GATEWAY', 'BILLING_NOT_CONFIGURED', 'DEMO_READ_ONLY', 'PLAN_NOT_FOUND'],
    })
    .input(checkoutInput)
    .output(checkoutOutput)
    .mutation(({ ctx, input }) => checkout.checkout(ctx, actorOf(ctx), { ...input, workspaceId: ctx.workspace.id })),

  current: workspaceProcedure('billing.view', activeOrNamed)
    .meta({
      mcp: { scopes: ['read'] },
      openapi: {
        method: 'GET',
        path: '/billing/current',
        description:
          "The workspace's plan, edition, limits, subscription status and period end (FREE without a subscription).",
        tags,
        summary: 'Current plan, edition, status and period end',
      },
    })
    .input(workspaceBillingInput)
    .output(currentPlanOutput)
    .query(({ ctx }) => billing.currentPlan(ctx, { workspaceId: ctx.workspace.id })),

  history: workspaceProcedure('billing.view', activeOrNamed)
    .meta({
      openapi: {
        method: 'GET',
        path: '/billing/history',
        description: "The workspace's payments, newest first, paginated.",
        tags,
        summary: 'Payment history, newest first',
      },
    })
    .input(historyInput)
    .output(historyOutput)
    .query(({ ctx, input }) => billing.paymentHistory(ctx, { ...input, workspaceId: ctx.workspace.id })),

  invoices: workspaceProcedure('billing.view', activeOrNamed)
    .meta({
      openapi: {
        method: 'GET',
        path: '/billing/invoices',
        description:
          "The workspace's invoices as the processor reported them (OPEN, PAID, FAILED, VOID), newest first, by page or cursor. hostedUrl is the processor's page of the invoice, when it has one.",
        tags,
        summary: 'Invoices, newest first',
      },
    })
    .input(historyInput)
    .output(invoicesOutput)
    .query(({ ctx, input }) => invoices.listInvoices(ctx, { ...input, workspaceId: ctx.workspace.id })),

  cancel: workspaceProcedure('billing.manage', activeOrNamed)
    .meta({
      openapi: {
        method: 'POST',
        path: '/billing/cancel',
        description:
          'Cancels the subscription: at once with MOCK, at the end of the paid period with a processor. Webhooks subscribed to subscription.canceled are told.',
        tags,
        summary: 'Cancel the subscription (MOCK: at once; processors: at period end)',
      },
      errors: ['BAD_GATEWAY', 'BILLING_NOT_CONFIGURED', 'CONFLICT'],
    })
    .input(workspaceBillingInput)
    .output(currentPlanOutput)
    .mutation(({ ctx }) => checkout.cancel(ctx, actorOf(ctx), { workspaceId: ctx.workspace.id })),

  portal: workspaceProcedure('billing.manage', activeOrNamed)
    .meta({
      openapi: {
        method: 'POST',
        path: '/billing/portal',
        description:
          "A link to the payment processor's customer portal for the workspace (payment methods, invoices). Not available with MOCK.",
        tags,
        summary: "The processor's billing portal for the workspace",
      },
      errors: ['BAD_GATEWAY', 'BILLING_NOT_CONFIGURED', 'CONFLICT'],
    })
    .input(workspaceBillingInput)
    .output(portalOutput)
    .mutation(({ ctx }) => checkout.portal(ctx, { workspaceId: ctx.workspace.id })),

  legacyCurrent: workspaceProcedure('billing.view')
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/billing',
        description: 'The current plan of the workspace; the same as GET /billing/current, kept for existing clients.',
        tags: legacy,
        summary: 'Current plan (legacy route)',
      },
    })
    .input(legacyWorkspaceInput)
    .output(currentPlanOutput)
    .query(({ ctx }) => billing.currentPlan(ctx, { workspaceId: ctx.workspace.id })),

  legacyCheckout: workspaceProcedure('billing.manage')
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/billing/mock-checkout',
        description: 'Buys a plan; the same as POST /billing/checkout, kept for existing clients.',
        tags: legacy,
        summary: 'Checkout (legacy route; same as POST /billing/checkout)',
      },
      errors: ['PLAN_NOT_FOUND'],
    })
    .input(legacyCheckoutInput)
    .output(checkoutOutput)
    .mutation(({ ctx, input }) => checkout.checkout(ctx, actorOf(ctx), { ...input, workspaceId: ctx.workspace.id })),

  legacyCancel: workspaceProcedure('billing.manage')
    .meta({
      openapi: {
        method: 'POST',
        path: '/workspaces/{workspaceId}/billing/cancel',
        description: 'Cancels the subscription; the same as POST /billing/cancel, kept for existing clients.',
        tags: legacy,
        summary: 'Cancel the subscription (legacy route)',
      },
      errors: ['BAD_GATEWAY', 'BILLING_NOT_CONFIGURED', 'CONFLICT'],
    })
    .input(legacyWorkspaceInput)
    .output(currentPlanOutput)
    .mutation(({ ctx }) => checkout.cancel(ctx, actorOf(ctx), { workspaceId: ctx.workspace.id })),

  legacyPayments: workspaceProcedure('billing.view')
    .meta({
      openapi: {
        method: 'GET',
        path: '/workspaces/{workspaceId}/billing/payments',
        description: 'Payment history; the same as GET /billing/history, kept for existing clients.',
        tags: legacy,
        summary: 'Payment history (legacy route)',
      },
    })
    .input(legacyHistoryInput)
    .output(historyOutput)
    .query(({ ctx, input }) => billing.paymentHistory(ctx, { ...input, workspaceId: ctx.workspace.id })),
});
