// The application router: one sub-router per domain. Order matters for REST matching (first match wins),
// so within a domain static paths are declared before parameter paths (tests/openapi.test.ts checks it).
import { router } from '../server/platform/trpc.js';
import { aiRouter } from './ai/router.js';
import { apiKeysRouter } from './api-keys/router.js';
import { publicApiRouter } from './public-api/router.js';
import { webhooksRouter } from './webhooks/router.js';
import { monitoringRouter } from './monitoring/router.js';
import { updatesRouter } from './updates/router.js';
import { filesRouter } from './files/router.js';
import { statusRouter } from './status/router.js';
import { analyticsRouter } from './analytics/router.js';
import { supportRouter } from './support/router.js';
import { insightsRouter } from './insights/router.js';
import { searchRouter } from './search/router.js';
import { auditRouter } from './audit/router.js';
import { billingRouter } from './billing/router.js';
import { plansRouter } from './billing/plans-router.js';
import { authRouter } from './auth/router.js';
import { accountRouter } from './account/router.js';
import { oauthRouter } from './oauth/router.js';
import { demoRouter } from './demo/router.js';
import { emailRouter } from './email/router.js';
import { healthRouter } from './health/router.js';
import { adminUsersRouter } from './users/router.js';
import { adminWorkspacesRouter } from './workspaces/admin-router.js';
import { workspacesRouter } from './workspaces/router.js';
import { ssoRouter } from './sso/router.js';
import { scimRouter } from './scim/router.js';
import { mcpRouter } from './mcp/router.js';

export const appRouter = router({
  health: healthRouter,
  status: statusRouter,
  demo: demoRouter,
  auth: authRouter,
  account: accountRouter,
  oauth: oauthRouter,
  workspaces: workspacesRouter,
  sso: ssoRouter,
  scim: scimRouter,
  audit: auditRouter,
  billing: billingRouter,
  ai: aiRouter,
  apiKeys: apiKeysRouter,
  mcp: mcpRouter,
  publicApi: publicApiRouter,
  webhooks: webhooksRouter,
  monitoring: monitoringRouter,
  updates: updatesRouter,
  files: filesRouter,
  analytics: analyticsRouter,
  support: supportRouter,
  insights: insightsRouter,
  search: searchRouter,
  plans: plansRouter,
  email: emailRouter,
  adminUsers: adminUsersRouter,
  adminWorkspaces: adminWorkspacesRouter,
});

export type AppRouter = typeof appRouter;
