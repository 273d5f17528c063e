// Types for oidc-provider 8 (the package ships none): the parts tests/helpers/oidc-provider.ts uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  type Handler = (req: IncomingMessage, res: ServerResponse) => void;

  export interface ClientMetadata {
    client_id: string;
    client_secret: string;
    redirect_uris: string[];
    grant_types?: string[];
    response_types?: string[];
    token_endpoint_auth_method?: string;
  }

  export interface Account {
    accountId: string;
    claims(): Record<string, unknown> | Promise<Record<string, unknown>>;
  }

  export interface Configuration {
    clients?: ClientMetadata[];
    jwks?: { keys: Array<Record<string, unknown>> };
    cookies?: { keys?: string[] };
    claims?: Record<string, string[]>;
    conformIdTokenClaims?: boolean;
    features?: Record<string, { enabled: boolean }>;
    findAccount?: (ctx: unknown, id: string) => Account | undefined | Promise<Account | undefined>;
    interactions?: { url?: (ctx: unknown, interaction: { uid: string }) => string };
    pkce?: { required?: () => boolean };
    ttl?: Record<string, number | ((...args: unknown[]) => number)>;
  }

  export interface InteractionDetails {
    uid: string;
    params: Record<string, unknown> & { client_id: string; scope?: string };
    prompt: { name: string; details: Record<string, unknown> };
  }

  export interface Grant {
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }

  export interface IdTokenInstance {
    client: unknown;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    callback(): Handler;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    Grant: new (properties: { accountId: string; clientId: string }) => Grant;
    Client: { find(id: string): Promise<unknown> };
    IdToken: {
      prototype: IdTokenInstance & { issue(this: IdTokenInstance, options?: unknown): Promise<string> };
    };
  }
}
