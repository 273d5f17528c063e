// AI text generation: templates, the monthly limits, generation, the provider's status. Limits are
// reserved in the database before the provider is called (reservations.ts: one conditional upsert each, so
// concurrent requests never pass a limit) and released again when the provider fails, so a failure costs no
// quota. An in-process provider (MOCK) answers first, and the statement that reserves also stores its
// generation. On a metered plan, the statement that stores an overage generation also writes its meter
// command. History and usage are in history.ts.
import crypto from 'node:crypto';
import type { Selectable } from 'kysely';
import type { AiGenerationsTable, Database, Edition } from '../../db/schema.js';
import { isDemoAccount, isTestAccount } from '../../server/platform/accounts.js';
import { signedInUser, type Actor } from '../../server/platform/actor.js';
import type { Config } from '../../server/platform/config.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError, ERROR_STATUS } from '../../server/platform/errors.js';
import type { WorkspaceAccess } from '../workspaces/access.js';
import { estimateTokens } from './providers/mock.js';
import type { GenerationResult } from './providers/types.js';
import {
  recordSucceeded,
  release,
  reserve,
  type Granted,
  type Metering,
  type NewGeneration,
  type Stored,
} from './reservations.js';
import type { GenerateInput } from './schemas.js';

const DEFAULT_MAX_TOKENS = 1024;

/** Monthly generations of each edition when the workspace's plan limits do not say. */
const EDITION_GENERATIONS: Record<Edition, number | undefined> = {
  LITE: 20,
  PRO: 500,
  ENTERPRISE: 5000,
  CUSTOM: undefined,
};

// ---------------------------------------------------------------- periods

/** The calendar month (UTC) of `now`: its first day as a date, and when the next one starts. */
export function monthOf(now = new Date()) {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const resetsAt = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { period: start.toISOString().slice(0, 10), start, resetsAt };
}

// ---------------------------------------------------------------- templates

export async function listTemplates({ db }: Pick<AppDeps, 'db'>) {
  const rows = await db
    .selectFrom('ai_templates')
    .selectAll()
    .where('is_active', '=', true)
    .orderBy('category')
    .orderBy('name')
    .execute();
  return { items: rows.map(toTemplate) };
}

export async function getTemplate({ db }: Pick<AppDeps, 'db'>, { templateId }: { templateId: string }) {
  const row = await db
    .selectFrom('ai_templates')
    .selectAll()
    .where('id', '=', templateId)
    .where('is_active', '=', true)
    .executeTakeFirst();
  if (!row) throw new AppError('NOT_FOUND', 'Template not found. GET /ai/templates lists the available templates.');
  return toTemplate(row);
}

function toTemplate(t: Selectable<Database['ai_templates']>) {
  return {
    id: t.id,
    slug: t.slug,
    name: t.name,
    description: t.description,
    category: t.category,
    body: t.body,
    variables: t.variables,
  };
}

/**
 * The template's body with its {{variables}} filled. Without `variables` at all, the prompt fills them
 * (the simple use: pick a template, type the subject); with `variables`, a missing one is a 400 naming it.
 */
export function fillTemplate(
  template: { body: string; variables: string[] },
  values: Record<string, string> | undefined,
  prompt: string,
) {
  if (values === undefined) values = Object.fromEntries(template.variables.map((v) => [v, prompt]));
  const missing = template.variables.filter((v) => !values[v]?.trim());
  if (missing.length) {
    throw new AppError(
      'BAD_REQUEST',
      `Invalid input: the template needs ${missing.map((m) => `"${m}"`).join(', ')} in variables.`,
      missing.map((m) => ({ path: `variables.${m}`, message: 'Required by the template', code: 'missing_variable' })),
    );
  }
  return template.body.replace(
    /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g,
    (whole, name: string) => values[name] ?? whole,
  );
}

// ---------------------------------------------------------------- limits

export interface EffectiveLimit {
  limit: number;
  source: 'PLAN' | 'SYSTEM' | 'TEST_ACCOUNT';
}

/** The effective monthly limit of a workspace: its plan's (from the membership loaded with the caller)
 * or the service's AI_MONTHLY_GENERATION_LIMIT, whichever is smaller. */
export function workspaceLimit(
  config: Pick<Config, 'AI_MONTHLY_GENERATION_LIMIT'>,
  workspace: Pick<WorkspaceAccess, 'edition' | 'limits'>,
): EffectiveLimit {
  const plan = workspace.limits.aiMonthlyGenerations ?? EDITION_GENERATIONS[workspace.edition];
  const system = config.AI_MONTHLY_GENERATION_LIMIT;
  return plan !== undefined && plan < system ? { limit: plan, source: 'PLAN' } : { limit: system, source: 'SYSTEM' };
}

// ---------------------------------------------------------------- generation

/** A stored generation as the API shows it (also bench/bare-server.ts's page). */
export const toGeneration = (g: Omit<Selectable<AiGenerationsTable>, 'heartbeat_at'>) => ({
  id: g.id,
  workspaceId: g.workspace_id,
  userId: g.user_id,
  templateId: g.template_id,
  provider: g.provider,
  model: g.model,
  prompt: g.prompt,
  systemPrompt: g.system_prompt,
  temperature: g.temperature,
  output: g.output,
  status: g.status,
  promptTokens: g.prompt_tokens,
  completionTokens: g.completion_tokens,
  totalTokens: g.prompt_tokens + g.completion_tokens,
  durationMs: g.duration_ms,
  isSample: g.is_sample,
  createdAt: g.created_at.toISOString(),
});

export const limitReached = (limit: EffectiveLimit) =>
  new AppError(
    'AI_MONTHLY_LIMIT_REACHED',
    `This workspace has used its ${limit.limit} AI generations for this month (${limit.source === 'PLAN' ? 'plan limit' : 'service limit'}). Upgrade the plan or wait for the next month.`,
  );

/**
 * What every generation checks and builds before it counts: the demo rule, the provider's key, the
 * template filled, the provider request, the stored row's fields and the workspace's limit.
 */
export async function prepareGeneration(
  deps: Pick<AppDeps, 'db' | 'config' | 'ai'>,
  actor: Actor,
  input: GenerateInput & { workspace: WorkspaceAccess },
) {
  const { config } = deps;
  const { workspace } = input;
  const user = signedInUser(actor);
  if (config.AI_DEMO_BLOCK_REAL_GENERATION && isDemoAccount(config, user.email)) {
    throw new AppError(
      'DEMO_GENERATION_DISABLED',
      'Real generation is disabled in the public demo. Sample results are in your history (GET /ai/history).',
    );
  }
  if (!deps.ai.configured) {
    throw new AppError(
      'AI_PROVIDER_NOT_CONFIGURED',
      `AI generation is not available: ${deps.ai.name} is selected but its API key is not set. Please contact support.`,
    );
  }
  const template = input.templateId ? await getTemplate(deps, { templateId: input.templateId }) : undefined;
  const prompt = !template
    ? input.prompt
    : input.variables === undefined
      ? fillTemplate(template, undefined, input.prompt)
      : `${fillTemplate(template, input.variables, input.prompt)}\n\n${input.prompt}`;
  const model = input.model ?? config.AI_DEFAULT_MODEL ?? deps.ai.defaultModel;
  const request = {
    prompt,
    systemPrompt: input.systemPrompt,
    model,
    temperature: input.temperature,
    maxTokens: input.maxTokens ?? DEFAULT_MAX_TOKENS,
  };
  const base = {
    workspace_id: workspace.id,
    user_id: user.id,
    template_id: template?.id ?? null,
    provider: deps.ai.name,
    model,
    prompt,
    system_prompt: input.systemPrompt ?? null,
    temperature: input.temperature ?? null,
  };
  // On a metered plan (its limits copy says meteredOverage) generations past the plan's amount are billed
  // as usage, up to the service's ceiling; each one past it becomes a meter command in the billing outbox,
  // written by the statement that stores the generation (reservations.ts), so it costs no round trip.
  const included = workspaceLimit(config, workspace);
  const metered = workspace.limits.meteredOverage === 1;
  const limit: EffectiveLimit = metered ? { limit: config.AI_MONTHLY_GENERATION_LIMIT, source: 'SYSTEM' } : included;
  const period = monthOf().period;
  const metering: Metering | undefined = metered ? { period, included: included.limit } : undefined;
  /** The month of the meter command of a generation counted `used`-th this month: set when it is overage. */
  const overage = (used: number) => (metering && used > metering.included ? metering.period : undefined);
  /** A stored generation as the JSON answer gives it, with the month's usage. */
  const answer = (generation: NewGeneration, stored: Stored, used: number) => ({
    ...toGeneration({ ...generation, ...stored, error_code: null, is_sample: false }),
    usage: { used, limit: limit.limit, remaining: Math.max(0, limit.limit - used) },
  });
  return {
    user,
    request,
    base,
    limit,
    period,
    metering,
    overage,
    answer,
    testAccount: isTestAccount(config, user.email),
  };
}

/** Counts a generation against the test account's cap (test accounts only): refused when it is reached. */
export async function reserveTestAccount(deps: Pick<AppDeps, 'db' | 'config'>, userId: string, period: string) {
  const { config, db } = deps;
  if ((await reserve(db, 'ai_user_usage_counters', userId, period, config.AI_TEST_USER_MONTHLY_LIMIT)) === undefined) {
    throw new AppError(
      'TEST_ACCOUNT_LIMIT_REACHED',
      `The test account limit is reached: test accounts may generate ${config.AI_TEST_USER_MONTHLY_LIMIT} times a month.`,
    );
  }
}

/**
 * Generates text for the workspace: demo and test-account rules first, then the provider's key, then
 * the limits (reserved atomically), then the provider call. The generation is stored either way; only a
 * success counts. An in-process provider (MOCK) answers first instead, since its answer costs nothing
 * and cannot fail on the network: then one statement reserves and stores it.
 */
export async function generate(
  deps: Pick<AppDeps, 'db' | 'config' | 'logger' | 'ai'>,
  actor: Actor,
  input: GenerateInput & { workspace: WorkspaceAccess },
) {
  const { db } = deps;
  const { workspace } = input;
  const { user, request, base, limit, period, metering, overage, answer, testAccount } = await prepareGeneration(
    deps,
    actor,
    input,
  );
  const { prompt, model } = request;
  const succeeded = (result: GenerationResult, started: number): NewGeneration => ({
    ...base,
    id: crypto.randomUUID(),
    output: result.output,
    status: 'SUCCEEDED',
    prompt_tokens: result.promptTokens,
    completion_tokens: result.completionTokens,
    duration_ms: Math.round(performance.now() - started),
  });

  if (testAccount) await reserveTestAccount(deps, user.id, period);
  const releaseTestAccount = () => (testAccount ? release(db, 'ai_user_usage_counters', user.id, period) : undefined);

  if (deps.ai.inProcess) {
    let granted: Granted | undefined;
    let generation: NewGeneration;
    try {
      const started = performance.now();
      generation = succeeded(await deps.ai.generate(request), started);
      granted = await reserve(db, 'ai_usage_counters', workspace.id, period, limit.limit, generation, metering);
    } finally {
      if (!granted) await releaseTestAccount();
    }
    if (!granted) throw limitReached(limit);
    return answer(generation, granted.stored!, granted.used);
  }

  const granted = await reserve(db, 'ai_usage_counters', workspace.id, period, limit.limit);
  if (!granted) {
    await releaseTestAccount();
    throw limitReached(limit);
  }
  const started = performance.now();
  try {
    const generation = succeeded(await deps.ai.generate(request), started);
    const stored = await recordSucceeded(db, { ...generation, meter_period: overage(granted.used) });
    return answer(generation, stored, granted.used);
  } catch (err) {
    await release(db, 'ai_usage_counters', workspace.id, period);
    await releaseTestAccount();
    if (err instanceof AppError && err.status === ERROR_STATUS.AI_PROVIDER_ERROR) {
      deps.logger.warn(
        { provider: deps.ai.name, model, cause: (err as { detail?: unknown }).detail },
        'AI provider failed',
      );
      await db
        .insertInto('ai_generations')
        .values({
          ...base,
          status: 'FAILED',
          error_code: 'AI_PROVIDER_ERROR',
          prompt_tokens: estimateTokens(prompt),
          duration_ms: Math.round(performance.now() - started),
        })
        .execute();
    }
    throw err;
  }
}

/** The provider and model, and what the demo and test-account rules mean for the caller. */
export function providerStatus(deps: Pick<AppDeps, 'config' | 'ai'>, actor: Actor) {
  const { config, ai } = deps;
  const user = signedInUser(actor);
  return {
    provider: ai.name,
    model: config.AI_DEFAULT_MODEL ?? ai.defaultModel,
    configured: ai.configured,
    demoRestricted: config.AI_DEMO_BLOCK_REAL_GENERATION && isDemoAccount(config, user.email),
    blockRealGeneration: config.AI_DEMO_BLOCK_REAL_GENERATION,
    showSampleHistory: config.AI_DEMO_SHOW_SAMPLE_HISTORY,
    testAccount: isTestAccount(config, user.email),
  };
}
