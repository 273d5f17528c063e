// The domains' long-lived services on every procedure's ctx (AppDeps): declared here, next to the domains
// that own them, and built by the composition root (server/deps.ts). The platform declares an empty
// DomainServices and names no domain type; this adds to it (TypeScript declaration merging).
import type { PlanCatalog } from './billing/plans.js';
import type { Processors } from './billing/processors/index.js';
import type { TextProvider } from './ai/providers/types.js';
import type { WebhookRunner } from './webhooks/runner.js';
import type { IdentityProviders } from './oauth/providers/types.js';
import type { ImageWork } from './files/images.js';

declare module '../server/platform/context.js' {
  interface DomainServices {
    plans: PlanCatalog;
    processors: Processors;
    /** The text-generation provider AI_PROVIDER selects. */
    ai: TextProvider;
    /** Delivers webhook events: directly, or through the BullMQ queue and its worker. */
    webhooks: WebhookRunner;
    /** The identity providers whose settings are present (sign-in with GitHub, Google, OpenID Connect). */
    identityProviders: IdentityProviders;
    /** Uploaded images, worked in the image process, a few at a time (IMAGE_WORK_CONCURRENCY, IMAGE_WORK_QUEUE). */
    imageWork: ImageWork;
  }
}
