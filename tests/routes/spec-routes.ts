// The routes the product promises, as a fixture for tests/routes/spec-routes.test.ts.
//
// Copied by hand from the product's route tables (authentication, AI, billing with the admin plan routes and
// the legacy workspace billing routes, developer, public API, monitoring, product updates and other named
// routes) and from the routes the product's design decisions name where those tables leave them open
// (GET /admin/email-logs; the workspace, team, lifecycle and admin routes). docs/api.md describes them; the list is
// kept here so that a route the product promises cannot disappear unnoticed.
//
// Paths are written the way /openapi.json writes them (`{name}` parameters). Rows that name several paths
// in one cell (GET /health, /search/status, ...) are one entry per path. Routes the service has beyond
// these tables (e.g. POST /billing/portal, key and secret rotation, file downloads) are not listed: this is
// what the product promises, not everything that exists.

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface SpecRoute {
  method: HttpMethod;
  path: string;
  /** The table the route was copied from. */
  source: string;
}

const AUTH = 'Product routes: Authentication routes';
const AI = 'Product routes: AI routes';
const BILLING = 'Product routes: Billing routes';
const ADMIN_PLANS = 'Product routes: Billing routes, Admin plan routes';
const LEGACY_BILLING = 'Product routes: Billing routes, legacy workspace billing routes';
const DEVELOPER = 'Product routes: Developer routes';
const PUBLIC_API = 'Product routes: Developer routes, Public API';
const MONITORING = 'Product routes: Monitoring routes';
const UPDATES = 'Product routes: Product update routes';
const OTHER = 'Product routes: Other named routes';
const DESIGN_ACCOUNTS = 'Product decisions: Accounts and sessions';
const DESIGN_WORKSPACES = 'Product decisions: Workspaces, roles, admin (workspace routes)';
const DESIGN_ADMIN = 'Product decisions: Workspaces, roles, admin (admin routes)';
const DESIGN_LIFECYCLE = 'Product decisions: Workspace lifecycle';

const r = (method: HttpMethod, path: string, source: string): SpecRoute => ({ method, path, source });

export const SPEC_ROUTES: readonly SpecRoute[] = [
  // ---- Authentication routes
  r('POST', '/auth/register', AUTH),
  r('POST', '/auth/login', AUTH),
  r('POST', '/auth/refresh', AUTH),
  r('POST', '/auth/logout', AUTH),
  r('GET', '/auth/me', AUTH),
  r('POST', '/auth/forgot-password', AUTH),
  r('POST', '/auth/reset-password', AUTH),
  r('POST', '/auth/resend-verification', AUTH),
  r('POST', '/auth/verify-email', AUTH),

  // ---- AI routes
  r('GET', '/ai/provider-status', AI),
  r('POST', '/ai/generate', AI),
  r('GET', '/ai/history', AI),
  r('GET', '/ai/usage', AI),
  r('GET', '/ai/templates', AI),
  r('GET', '/ai/templates/{templateId}', AI),
  r('POST', '/workspaces/{workspaceId}/ai/generate', AI),
  r('GET', '/workspaces/{workspaceId}/ai/generations', AI),
  r('GET', '/workspaces/{workspaceId}/ai/usage', AI),
  r('GET', '/admin/ai-usage', AI),

  // ---- Billing routes
  r('GET', '/billing/provider-status', BILLING),
  r('POST', '/billing/checkout', BILLING),
  r('GET', '/billing/current', BILLING),
  r('GET', '/billing/history', BILLING),
  r('POST', '/billing/cancel', BILLING),
  r('GET', '/billing/plans', BILLING),
  r('POST', '/billing/webhooks/processor-a', BILLING),
  r('POST', '/billing/webhooks/processor-b', BILLING),
  r('POST', '/billing/webhooks/mock', BILLING),

  // ---- Admin plan routes
  r('GET', '/admin/billing/plans', ADMIN_PLANS),
  r('GET', '/admin/billing/plans/{planId}', ADMIN_PLANS),
  r('POST', '/admin/billing/plans', ADMIN_PLANS),
  r('PATCH', '/admin/billing/plans/{planId}', ADMIN_PLANS),
  r('POST', '/admin/billing/plans/{planId}/archive', ADMIN_PLANS),
  r('POST', '/admin/billing/plans/{planId}/restore', ADMIN_PLANS),
  r('DELETE', '/admin/billing/plans/{planId}', ADMIN_PLANS),
  r('GET', '/admin/billing/settings', ADMIN_PLANS),
  r('PATCH', '/admin/billing/settings', ADMIN_PLANS),

  // ---- legacy workspace billing routes kept for compatibility
  r('GET', '/workspaces/{workspaceId}/billing', LEGACY_BILLING),
  r('POST', '/workspaces/{workspaceId}/billing/mock-checkout', LEGACY_BILLING),
  r('POST', '/workspaces/{workspaceId}/billing/cancel', LEGACY_BILLING),
  r('GET', '/workspaces/{workspaceId}/billing/payments', LEGACY_BILLING),

  // ---- Developer routes
  r('GET', '/workspaces/{workspaceId}/api-keys', DEVELOPER),
  r('POST', '/workspaces/{workspaceId}/api-keys', DEVELOPER),
  r('PATCH', '/workspaces/{workspaceId}/api-keys/{apiKeyId}', DEVELOPER),
  r('DELETE', '/workspaces/{workspaceId}/api-keys/{apiKeyId}', DEVELOPER),
  r('GET', '/workspaces/{workspaceId}/webhooks', DEVELOPER),
  r('POST', '/workspaces/{workspaceId}/webhooks', DEVELOPER),
  r('PATCH', '/workspaces/{workspaceId}/webhooks/{webhookId}', DEVELOPER),
  r('DELETE', '/workspaces/{workspaceId}/webhooks/{webhookId}', DEVELOPER),
  r('POST', '/workspaces/{workspaceId}/webhooks/{webhookId}/test', DEVELOPER),
  r('GET', '/workspaces/{workspaceId}/webhook-deliveries', DEVELOPER),
  r('POST', '/workspaces/{workspaceId}/webhook-deliveries/{deliveryId}/retry', DEVELOPER),

  // ---- Public API (API key auth)
  r('GET', '/public-api/me', PUBLIC_API),
  r('GET', '/public-api/workspace', PUBLIC_API),

  // ---- Monitoring routes
  r('GET', '/admin/monitoring/status', MONITORING),
  r('GET', '/admin/monitoring/summary', MONITORING),
  r('GET', '/admin/monitoring/errors', MONITORING),
  r('GET', '/admin/monitoring/requests', MONITORING),
  r('POST', '/admin/monitoring/clear', MONITORING),

  // ---- Product update routes
  r('GET', '/updates/status', UPDATES),
  r('GET', '/updates/releases', UPDATES),
  r('GET', '/updates/releases/latest', UPDATES),
  r('GET', '/updates/releases/{version}', UPDATES),
  r('GET', '/updates/releases/{version}/download', UPDATES),
  r('GET', '/admin/releases', UPDATES),
  r('GET', '/admin/releases/latest', UPDATES),

  // ---- Other named routes
  r('PATCH', '/workspaces/{workspaceId}/branding', OTHER),
  r('POST', '/workspaces/{workspaceId}/branding/logo', OTHER),
  r('POST', '/profile/avatar', OTHER),
  r('GET', '/health', OTHER),
  r('GET', '/search/status', OTHER),
  r('GET', '/security/status', OTHER),
  r('GET', '/demo/status', OTHER),
  r('GET', '/storage/provider-status', OTHER),
  r('POST', '/analytics/events', OTHER),
  r('GET', '/admin/analytics/summary', OTHER),
  r('POST', '/contact/messages', OTHER),
  r('POST', '/support/tickets', OTHER),
  r('POST', '/storage/upload', OTHER),
  r('GET', '/dashboard/insights', OTHER),

  // ---- Accounts and sessions
  r('GET', '/admin/email-logs', DESIGN_ACCOUNTS),

  // ---- workspace and team routes
  r('GET', '/workspaces', DESIGN_WORKSPACES),
  r('POST', '/workspaces', DESIGN_WORKSPACES),
  r('GET', '/workspaces/{workspaceId}', DESIGN_WORKSPACES),
  r('PATCH', '/workspaces/{workspaceId}', DESIGN_WORKSPACES),
  r('GET', '/workspaces/{workspaceId}/members', DESIGN_WORKSPACES),
  r('POST', '/workspaces/{workspaceId}/invitations', DESIGN_WORKSPACES),
  r('POST', '/invitations/accept', DESIGN_WORKSPACES),
  r('PATCH', '/workspaces/{workspaceId}/members/{userId}', DESIGN_WORKSPACES),
  r('DELETE', '/workspaces/{workspaceId}/members/{userId}', DESIGN_WORKSPACES),

  // ---- workspace lifecycle: invitations managed, leaving, hand-over, deletion
  r('GET', '/workspaces/{workspaceId}/invitations', DESIGN_LIFECYCLE),
  r('DELETE', '/workspaces/{workspaceId}/invitations/{invitationId}', DESIGN_LIFECYCLE),
  r('POST', '/workspaces/{workspaceId}/invitations/{invitationId}/resend', DESIGN_LIFECYCLE),
  r('POST', '/workspaces/{workspaceId}/leave', DESIGN_LIFECYCLE),
  r('POST', '/workspaces/{workspaceId}/transfer-ownership', DESIGN_LIFECYCLE),
  r('POST', '/workspaces/{workspaceId}/delete', DESIGN_LIFECYCLE),
  r('POST', '/workspaces/{workspaceId}/restore', DESIGN_LIFECYCLE),

  // ---- admin routes
  r('GET', '/admin/users', DESIGN_ADMIN),
  r('GET', '/admin/users/{userId}', DESIGN_ADMIN),
  r('PATCH', '/admin/users/{userId}', DESIGN_ADMIN),
  r('POST', '/admin/users/{userId}/suspend', DESIGN_ADMIN),
  r('POST', '/admin/users/{userId}/activate', DESIGN_ADMIN),
  r('GET', '/admin/workspaces', DESIGN_ADMIN),
  r('POST', '/admin/workspaces', DESIGN_ADMIN),
  r('GET', '/admin/workspaces/{workspaceId}', DESIGN_ADMIN),
  r('PATCH', '/admin/workspaces/{workspaceId}', DESIGN_ADMIN),
  r('POST', '/admin/workspaces/{workspaceId}/suspend', DESIGN_ADMIN),
  r('POST', '/admin/workspaces/{workspaceId}/activate', DESIGN_ADMIN),
  r('POST', '/admin/workspaces/{workspaceId}/archive', DESIGN_ADMIN),
  r('POST', '/admin/workspaces/{workspaceId}/restore', DESIGN_ADMIN),
  r('POST', '/admin/workspaces/{workspaceId}/transfer-owner', DESIGN_ADMIN),
  r('DELETE', '/admin/workspaces/{workspaceId}', DESIGN_ADMIN),
  r('GET', '/admin/audit-logs', DESIGN_ADMIN),
];

export const routeKey = (route: Pick<SpecRoute, 'method' | 'path'>) => `${route.method} ${route.path}`;
