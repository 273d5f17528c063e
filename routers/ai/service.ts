// AI text generation: templates, generation under limits, history, usage. Limits are reserved in the
// database before the provider is called (one conditional upsert each, so concurrent requests never pass
// a limit) and released again when the provider fails, so a failure costs no quota. An in-process
// provider (MOCK) answers first, and the statement that reserves also stores its generation.
import crypto from 'node:crypto';
import { sql, type Kysely, type Selectable } from 'kysely';
import { batched, groupPositions } from '../../db/batched.js';
import type { AiGenerationsTable, Database, Edition } from '../../db/schema.js';
import { isDemoAccount, isTestAccount } from '../../server/platform/accounts.js';
import type { Config } from '../../server/platform/config.js';
import { AppError, ERROR_STATUS } from '../../server/platform/errors.js';
import type { Logger } from '../../server/platform/logger.js';
import { listRequestOf, mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import type { WorkspaceAccess } from '../workspaces/access.js';
import { eventsOfRows } from '../events/emit.js';
import { estimateTokens } from './providers/mock.js';
import type { GenerationResult, TextProvider } from './providers/types.js';
import type { GenerateInput } from './schemas.js';

type Db = Kysely<Database>;

export interface AiDeps {
  db: Db;
  config: Config;
  logger: Logger;
  ai: TextProvider;
}

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

export async function listTemplates(db: Db) {
  const rows = await db
    .selectFrom('ai_templates')
    .selectAll()
    .where('is_active', '=', true)
    .orderBy('category')
    .orderBy('name')
    .execute();
  return { items: rows.map(toTemplate) };
}

export async function getTemplate(db: Db, templateId: string) {
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
function fillTemplate(
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
function workspaceLimit(
  config: Pick<Config, 'AI_MONTHLY_GENERATION_LIMIT'>,
  workspace: Pick<WorkspaceAccess, 'edition' | 'limits'>,
): EffectiveLimit {
  const plan = workspace.limits.aiMonthlyGenerations ?? EDITION_GENERATIONS[workspace.edition];
  const system = config.AI_MONTHLY_GENERATION_LIMIT;
  return plan !== undefined && plan < system ? { limit: plan, source: 'PLAN' } : { limit: system, source: 'SYSTEM' };
}

type CounterTable = 'ai_usage_counters' | 'ai_user_usage_counters';

/** The column a counter table is keyed by, besides the period. */
const keyColumnOf = (table: CounterTable) => (table === 'ai_usage_counters' ? 'workspace_id' : 'user_id');

type NewGeneration = Pick<
  Selectable<AiGenerationsTable>,
  | 'id'
  | 'workspace_id'
  | 'user_id'
  | 'template_id'
  | 'provider'
  | 'model'
  | 'prompt'
  | 'system_prompt'
  | 'temperature'
  | 'output'
  | 'status'
  | 'prompt_tokens'
  | 'completion_tokens'
  | 'duration_ms'
>;

/** What the database adds to a stored generation (the temperature as the real column holds it). */
type Stored = Pick<Selectable<AiGenerationsTable>, 'id' | 'temperature' | 'created_at'>;

interface Reservation {
  table: CounterTable;
  /** The workspace (ai_usage_counters) or the user (ai_user_usage_counters). */
  key: string;
  period: string;
  limit: number;
  /** A generation already made (by an in-process provider), stored by the statement that reserves. */
  generation?: NewGeneration;
}

interface Granted {
  /** The month's count including this generation. */
  used: number;
  /** Set when the reservation stored a generation. */
  stored?: Stored;
}

/**
 * The CTE `generation` that inserts succeeded generations (the rows travel as one JSON parameter, so the
 * statement's text is the same for any number of rows), with their ai.generation.completed domain
 * events. With `whenReserved`, nothing is inserted unless the CTE `reserved` answered a row.
 *
 * A generation's event is written only when an active webhook of its workspace subscribes to
 * ai.generation.completed: one event per generation is most of the outbox's volume, and an event no
 * webhook wants would only be dispatched to nobody (a webhook created later does not get the events from
 * before it; docs/decisions.md, Developer platform).
 */
function insertGenerations(items: readonly NewGeneration[], whenReserved = false) {
  return sql`generation as (
      insert into ai_generations (id, workspace_id, user_id, template_id, provider, model, prompt, system_prompt, temperature, output,
        status, prompt_tokens, completion_tokens, duration_ms)
      select id, workspace_id, user_id, template_id, provider, model, prompt, system_prompt, temperature, output,
        status, prompt_tokens, completion_tokens, duration_ms
      from jsonb_to_recordset(${JSON.stringify(items)}::jsonb) as g(id uuid, workspace_id uuid, user_id uuid, template_id uuid,
        provider text, model text, prompt text, system_prompt text, temperature real, output text, status text,
        prompt_tokens int, completion_tokens int, duration_ms int)
      ${whenReserved ? sql`where exists (select 1 from reserved)` : sql``}
      returning id, workspace_id, model, provider, prompt_tokens, completion_tokens, temperature, created_at
    ), event as (${eventsOfRows('ai.generation.completed', {
      workspaceId: sql`g.workspace_id`,
      data: {
        generationId: sql`g.id`,
        model: sql`g.model`,
        provider: sql`g.provider`,
        totalTokens: sql`g.prompt_tokens + g.completion_tokens`,
      },
      source: sql`from generation g
        where exists (select 1 from webhooks h where h.workspace_id = g.workspace_id and h.is_active and h.events ? 'ai.generation.completed')`,
    })})`;
}

/**
 * Counts `members.length` generations against a monthly counter if all of them stay within the limit,
 * in one statement: the conditional upsert takes the row lock, so concurrent statements see each other's
 * counts. The generations some members bring are stored by the same statement, only when the count is
 * granted. Answers the count including them (and what was stored), or undefined when they do not all fit
 * (then nothing is counted or stored).
 */
async function reserveMany(
  db: Db,
  r: Reservation,
  members: readonly Reservation[],
): Promise<{ used: number; stored: Map<string, Stored> } | undefined> {
  const n = members.length;
  const keyColumn = keyColumnOf(r.table);
  const upsert = sql`insert into ${sql.table(r.table)} (${sql.ref(keyColumn)}, period, generations) values (${r.key}, ${r.period}, ${n})
    on conflict (${sql.ref(keyColumn)}, period) do update set generations = ${sql.table(r.table)}.generations + ${n}
    where ${sql.table(r.table)}.generations + ${n} <= ${r.limit}
    returning generations`;
  const generations = members.flatMap((m) => (m.generation ? [m.generation] : []));
  if (generations.length === 0) {
    const { rows } = await sql<{ generations: number }>`${upsert}`.execute(db);
    return rows[0] && { used: rows[0].generations, stored: new Map() };
  }
  const { rows } = await sql<Stored & { used: number }>`
    with reserved as (${upsert}), ${insertGenerations(generations, true)}
    select g.id, g.temperature, g.created_at, r.generations as used from generation g, reserved r`.execute(db);
  return rows[0] && { used: rows[0].used, stored: new Map(rows.map(({ used: _, ...stored }) => [stored.id, stored])) };
}

/**
 * Reserves one generation per request against its counter, batched: the requests of a batch that count
 * against the same counter are reserved together by one statement when they all fit. When they do not
 * (the limit is near) or that statement fails, they are reserved one at a time, so exactly the room left
 * is granted (and a failure is only its own request's), and once one is refused the rest of the batch is
 * too (the counter is full). Each granted request gets its own count, as if they had come one after
 * another.
 */
const reserveOne = batched<Reservation, Granted | undefined>(async (db, inputs) => {
  // Refused unless granted below (DataLoader wants an answer in every position).
  const results: Array<Granted | undefined | Error> = inputs.map(() => undefined);
  const grant = (i: number, used: number, stored: Map<string, Stored>) => {
    const id = inputs[i].generation?.id;
    results[i] = id === undefined ? { used } : { used, stored: stored.get(id) };
  };
  await Promise.all(
    groupPositions(inputs, (r) => `${r.table}|${r.key}|${r.period}|${r.limit}`).map(async (positions) => {
      const r = inputs[positions[0]];
      const n = positions.length;
      const members = positions.map((i) => inputs[i]);
      if (r.limit <= 0) return; // nothing fits: all refused
      const together = n > r.limit ? undefined : await reserveMany(db, r, members).catch((err: Error) => err);
      if (together && !(together instanceof Error)) {
        positions.forEach((i, j) => grant(i, together.used - n + 1 + j, together.stored));
        return;
      }
      if (n === 1) {
        results[positions[0]] = together;
        return;
      }
      let full = false;
      for (const i of positions) {
        if (full) continue;
        const one = await reserveMany(db, r, [inputs[i]]).catch((err: Error) => err);
        if (one instanceof Error) results[i] = one;
        else if (one) grant(i, one.used, one.stored);
        else full = true;
      }
    }),
  );
  return results;
});

/** Counts one generation against a monthly counter if it stays within `limit` (storing `generation` with
 * it when given): the count including it, or undefined when the limit is reached. */
function reserve(db: Db, table: CounterTable, key: string, period: string, limit: number, generation?: NewGeneration) {
  return reserveOne(db, { table, key, period, limit, generation });
}

async function release(db: Db, table: CounterTable, key: string, period: string) {
  await sql`update ${sql.table(table)} set generations = greatest(generations - 1, 0)
    where ${sql.ref(keyColumnOf(table))} = ${key} and period = ${period}`.execute(db);
}

/**
 * Stores succeeded generations in one statement (atomic without a transaction's extra round trips): the
 * generations and their domain events. Token totals are summed from the generations when read, so this
 * statement does not touch the month's counter row, whose lock the reservations of other requests are
 * waiting for.
 */
async function storeSucceeded(db: Db, items: readonly NewGeneration[]) {
  const { rows } =
    await sql<Stored>`with ${insertGenerations(items)} select id, temperature, created_at from generation`.execute(db);
  return rows;
}

/** storeSucceeded for many requests at once. If the batch's statement fails, each is stored on its own,
 * so only a generation that cannot be stored fails its request. */
const recordSucceeded = batched<NewGeneration, Stored>(async (db, inputs) => {
  try {
    const rows = new Map((await storeSucceeded(db, inputs)).map((row) => [row.id, row]));
    return inputs.map((i) => rows.get(i.id) ?? new Error('the generation was not stored'));
  } catch (err) {
    if (inputs.length === 1) return [err as Error];
    return Promise.all(
      inputs.map((i) =>
        storeSucceeded(db, [i]).then(
          ([row]) => row,
          (e: Error) => e,
        ),
      ),
    );
  }
});

// ---------------------------------------------------------------- generation

type Caller = { id: string; email: string };

/** A stored generation as the API shows it (also bench/bare-server.ts's page). */
export const toGeneration = (g: Selectable<AiGenerationsTable>) => ({
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

const limitReached = (limit: EffectiveLimit) =>
  new AppError(
    'AI_MONTHLY_LIMIT_REACHED',
    `This workspace has used its ${limit.limit} AI generations for this month (${limit.source === 'PLAN' ? 'plan limit' : 'service limit'}). Upgrade the plan or wait for the next month.`,
  );

/**
 * Generates text for the workspace: demo and test-account rules first, then the provider's key, then
 * the limits (reserved atomically), then the provider call. The generation is stored either way; only a
 * success counts. An in-process provider (MOCK) answers first instead, since its answer costs nothing
 * and cannot fail on the network: then one statement reserves and stores it.
 */
export async function generate(deps: AiDeps, workspace: WorkspaceAccess, user: Caller, input: GenerateInput) {
  const { config, db } = deps;
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
  const template = input.templateId ? await getTemplate(db, input.templateId) : undefined;
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
  const succeeded = (result: GenerationResult, started: number): NewGeneration => ({
    ...base,
    id: crypto.randomUUID(),
    output: result.output,
    status: 'SUCCEEDED',
    prompt_tokens: result.promptTokens,
    completion_tokens: result.completionTokens,
    duration_ms: Math.round(performance.now() - started),
  });
  const limit = workspaceLimit(config, workspace);
  const answer = (generation: NewGeneration, stored: Stored, used: number) => ({
    ...toGeneration({ ...generation, ...stored, error_code: null, is_sample: false }),
    usage: { used, limit: limit.limit, remaining: Math.max(0, limit.limit - used) },
  });

  const { period } = monthOf();
  const testAccount = isTestAccount(config, user.email);
  if (
    testAccount &&
    (await reserve(db, 'ai_user_usage_counters', user.id, period, config.AI_TEST_USER_MONTHLY_LIMIT)) === undefined
  ) {
    throw new AppError(
      'TEST_ACCOUNT_LIMIT_REACHED',
      `The test account limit is reached: test accounts may generate ${config.AI_TEST_USER_MONTHLY_LIMIT} times a month.`,
    );
  }
  const releaseTestAccount = () => (testAccount ? release(db, 'ai_user_usage_counters', user.id, period) : undefined);

  if (deps.ai.inProcess) {
    let granted: Granted | undefined;
    let generation: NewGeneration;
    try {
      const started = performance.now();
      generation = succeeded(await deps.ai.generate(request), started);
      granted = await reserve(db, 'ai_usage_counters', workspace.id, period, limit.limit, generation);
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
    return answer(generation, await recordSucceeded(db, generation), granted.used);
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

// ---------------------------------------------------------------- history and usage

const SAMPLES = [
  {
    prompt: 'Write an outline for a blog post about remote onboarding for engineering managers.',
    output:
      'Title: Onboarding remote engineers in 30 days\n1. Before day one\n2. The first week\n3. The first month\n4. Measuring success',
  },
  {
    prompt: 'Write a product description of about 120 words for a standing desk.',
    output:
      'Work the way your body wants to: the desk rises from 70 to 120 cm in eight quiet seconds and remembers four heights...',
  },
  {
    prompt: 'Summarise the following text in 3 bullet points: our Q3 results.',
    output: '- Revenue grew 18% to 4.2 M\n- Churn fell to 2.1%\n- Two new enterprise customers signed',
  },
];

/**
 * Demo accounts see sample generations (AI_DEMO_SHOW_SAMPLE_HISTORY), created once per workspace: the
 * check and the insert run under a per-workspace advisory lock, so first visits arriving together insert
 * one set.
 */
async function ensureSamples(db: Db, workspaceId: string) {
  const hasSamples = (q: Db) =>
    q
      .selectFrom('ai_generations')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('is_sample', '=', true)
      .limit(1)
      .executeTakeFirst();
  if (await hasSamples(db)) return;
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`ai-samples:${workspaceId}`}))`.execute(trx);
    if (await hasSamples(trx)) return;
    await trx
      .insertInto('ai_generations')
      .values(
        SAMPLES.map((s) => ({
          workspace_id: workspaceId,
          provider: 'MOCK' as const,
          model: 'sample',
          prompt: s.prompt,
          output: s.output,
          status: 'SUCCEEDED' as const,
          is_sample: true,
          prompt_tokens: estimateTokens(s.prompt),
          completion_tokens: estimateTokens(s.output),
        })),
      )
      .execute();
  });
}

/** Newest first, by page or cursor (server/platform/pagination.ts), on the (workspace_id, created_at, id) index. */
export async function history(
  deps: Pick<AiDeps, 'db' | 'config'>,
  workspaceId: string,
  user: Caller,
  request: ListRequest,
) {
  const { db, config } = deps;
  const showSamples = config.AI_DEMO_SHOW_SAMPLE_HISTORY && isDemoAccount(config, user.email);
  if (showSamples) await ensureSamples(db, workspaceId);
  let query = db.selectFrom('ai_generations').selectAll().where('workspace_id', '=', workspaceId);
  // A literal, not a parameter: the history index holds only non-sample rows, which Postgres can use for
  // a page only when the condition is part of the statement's text (pages are batched: db/batched.ts).
  if (!showSamples) query = query.where(sql<boolean>`not is_sample`);
  const counters = [{ scope: 'ai_generations', id: workspaceId }];
  if (showSamples) counters.push({ scope: 'ai_generations.sample', id: workspaceId });
  const page = await paginate(deps, query, { list: 'ai.history', request: listRequestOf(request), counters });
  return mapItems(page, toGeneration);
}

export async function usage(deps: Pick<AiDeps, 'db' | 'config'>, workspace: WorkspaceAccess, user: Caller) {
  const workspaceId = workspace.id;
  const limit = workspaceLimit(deps.config, workspace);
  const { period, start, resetsAt } = monthOf();
  const [counter, byModel, userCounter] = await Promise.all([
    deps.db
      .selectFrom('ai_usage_counters')
      .select(['generations'])
      .where('workspace_id', '=', workspaceId)
      .where('period', '=', period)
      .executeTakeFirst(),
    deps.db
      .selectFrom('ai_generations')
      .select((eb) => [
        'provider',
        'model',
        eb.fn.countAll<string>().as('generations'),
        sql<string>`coalesce(sum(prompt_tokens + completion_tokens), 0)`.as('tokens'),
      ])
      .where('workspace_id', '=', workspaceId)
      .where('created_at', '>=', start)
      .where('status', '=', 'SUCCEEDED')
      .where('is_sample', '=', false)
      .groupBy(['provider', 'model'])
      .orderBy('generations', 'desc')
      .execute(),
    isTestAccount(deps.config, user.email)
      ? deps.db
          .selectFrom('ai_user_usage_counters')
          .select('generations')
          .where('user_id', '=', user.id)
          .where('period', '=', period)
          .executeTakeFirst()
      : undefined,
  ]);
  let effective: EffectiveLimit & { used: number } = { ...limit, used: counter?.generations ?? 0 };
  if (isTestAccount(deps.config, user.email)) {
    const testUsed = userCounter?.generations ?? 0;
    const testRemaining = deps.config.AI_TEST_USER_MONTHLY_LIMIT - testUsed;
    if (testRemaining < limit.limit - effective.used)
      effective = { limit: deps.config.AI_TEST_USER_MONTHLY_LIMIT, source: 'TEST_ACCOUNT', used: testUsed };
  }
  return {
    workspaceId,
    period: { start: start.toISOString(), resetsAt: resetsAt.toISOString() },
    used: effective.used,
    limit: effective.limit,
    limitSource: effective.source,
    remaining: Math.max(0, effective.limit - effective.used),
    tokens: byModel.reduce((sum, m) => sum + Number(m.tokens), 0),
    byModel: byModel.map((m) => ({
      provider: m.provider,
      model: m.model,
      generations: Number(m.generations),
      tokens: Number(m.tokens),
    })),
  };
}

export function providerStatus(deps: Pick<AiDeps, 'config' | 'ai'>, user: Caller) {
  const { config, ai } = deps;
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

/** Platform aggregates for admins: this month's totals, by provider and model, by workspace, recent. */
export async function adminUsage(db: Db) {
  const { start, resetsAt } = monthOf();
  const month = db
    .selectFrom('ai_generations as g')
    .where('g.created_at', '>=', start)
    .where('g.is_sample', '=', false);
  const tokens = sql<string>`coalesce(sum(g.prompt_tokens + g.completion_tokens), 0)`;
  const [totals, allTime, byProvider, byWorkspace, recent] = await Promise.all([
    month
      .select((eb) => [
        eb.fn.countAll<string>().filterWhere('g.status', '=', 'SUCCEEDED').as('succeeded'),
        eb.fn.countAll<string>().filterWhere('g.status', '=', 'FAILED').as('failed'),
        // Tokens of successful generations only, as in every other usage figure.
        sql<string>`coalesce(sum(g.prompt_tokens + g.completion_tokens) filter (where g.status = 'SUCCEEDED'), 0)`.as(
          'tokens',
        ),
      ])
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('ai_generations')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('status', '=', 'SUCCEEDED')
      .where('is_sample', '=', false)
      .executeTakeFirstOrThrow(),
    month
      .select((eb) => ['g.provider', 'g.model', eb.fn.countAll<string>().as('generations'), tokens.as('tokens')])
      .where('g.status', '=', 'SUCCEEDED')
      .groupBy(['g.provider', 'g.model'])
      .orderBy('generations', 'desc')
      .execute(),
    month
      .innerJoin('workspaces as w', 'w.id', 'g.workspace_id')
      .select((eb) => [
        'w.id as workspaceId',
        'w.name',
        eb.fn.countAll<string>().as('generations'),
        tokens.as('tokens'),
      ])
      .where('g.status', '=', 'SUCCEEDED')
      .groupBy(['w.id', 'w.name'])
      .orderBy('generations', 'desc')
      .limit(20)
      .execute(),
    db
      .selectFrom('ai_generations')
      .select([
        'id',
        'workspace_id',
        'user_id',
        'provider',
        'model',
        'status',
        'prompt_tokens',
        'completion_tokens',
        'duration_ms',
        'created_at',
      ])
      .where('is_sample', '=', false)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(20)
      .execute(),
  ]);
  return {
    period: { start: start.toISOString(), resetsAt: resetsAt.toISOString() },
    totals: {
      generationsThisMonth: Number(totals.succeeded),
      tokensThisMonth: Number(totals.tokens),
      generationsAllTime: Number(allTime.n),
      failedThisMonth: Number(totals.failed),
    },
    byProvider: byProvider.map((p) => ({
      provider: p.provider,
      model: p.model,
      generations: Number(p.generations),
      tokens: Number(p.tokens),
    })),
    byWorkspace: byWorkspace.map((w) => ({
      workspaceId: w.workspaceId,
      name: w.name,
      generations: Number(w.generations),
      tokens: Number(w.tokens),
    })),
    recent: recent.map((r) => ({
      id: r.id,
      workspaceId: r.workspace_id,
      userId: r.user_id,
      provider: r.provider,
      model: r.model,
      status: r.status,
      totalTokens: r.prompt_tokens + r.completion_tokens,
      durationMs: r.duration_ms,
      createdAt: r.created_at.toISOString(),
    })),
  };
}
