// The document's top-level `tags`: one entry per group of operations, with what the group is for. The
// document lists the groups its operations use, in this order; a group missing here fails
// tests/http/openapi-lint.test.ts (every tag an operation names has a description).
export const TAG_DESCRIPTIONS: Record<string, string> = {
  Status:
    'Health and status of the service and its providers. Public and never rate-limited, for load balancers and status pages.',
  'Single sign-on':
    "A workspace's enterprise sign-in: the domains it has verified (a TXT record), its SAML and OpenID Connect connections, and the policy that requires them. Owners only.",
  'Directory sync (SCIM)':
    "A workspace's directory sync set-up: SCIM bearer tokens (scim_..., shown once) and the mapping of directory groups to roles. Owners only. The SCIM protocol itself is served at /scim/v2 (RFC 7643, 7644), outside this document.",
  Auth: 'Accounts and sessions: register, sign in (password or identity provider), refresh and revoke tokens, verify the e-mail address, reset the password.',
  Profile: "The signed-in user's own profile and avatar, and other users' avatars.",
  Account:
    "The signed-in user's account settings: display name, change of e-mail address, account deletion and data export.",
  Workspaces:
    'Workspaces, their members, invitations and branding. Every call acts as a member of the workspace and needs the role the operation names.',
  Billing:
    'Plans, checkout, the current subscription and payments of a workspace. Billing changes are told to webhooks (billing.updated, subscription.*, payment.*).',
  'Billing (legacy)': 'The first billing routes, kept for existing clients: use the Billing group for new work.',
  'Billing webhooks':
    'Inbound events from the payment providers, each checked by its provider signature. Not for third parties.',
  AI: 'Text generation with templates, generation history and usage of the workspace.',
  'API keys':
    'Workspace API keys (wsk_...) for the public API: create, scope, rotate and revoke them. The secret is shown once.',
  'Public API':
    'Routes for machines, authenticated by a workspace API key (X-API-Key, or Authorization: Bearer wsk_...).',
  Webhooks:
    'Outbound webhooks of a workspace: the URL and events to deliver, delivery history, test deliveries and secret rotation. The events and their payloads are in the `webhooks` section of this document.',
  Storage: 'Files of a workspace: upload, download, and the state of the storage provider.',
  Updates: 'Release notes of the service.',
  Analytics: 'Product analytics events sent by the web client.',
  Support: 'Contact messages from visitors and support tickets from signed-in users.',
  Dashboard: 'Figures for the dashboard of the active workspace.',
  Search: 'Search across what the caller may read.',
  Admin:
    'Platform administration (platform role ADMIN; DEMO_ADMIN reads only): audit log, AI usage, releases and more.',
  'Admin: users': 'Platform administration of users: list, inspect, change, suspend and activate.',
  'Admin: workspaces': 'Platform administration of workspaces: list, inspect, create, change, suspend and archive.',
  'Admin: billing': 'Platform administration of plans and of the billing settings.',
  'Admin: monitoring': 'Platform administration: request and error figures of this instance.',
  Monitoring: 'Prometheus metrics, behind METRICS_TOKEN.',
  MCP: 'The apps connected to a workspace through the MCP endpoint (/mcp, OAuth 2.1): list and revoke their grants.',
  Meta: 'Where to start: GET / links to these docs, this document and the health check.',
};
