// AI history and usage: a workspace's generations (with the sample history demo accounts see), this
// month's usage against the limit, and the platform's aggregates for admins.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { isDemoAccount, isTestAccount } from '../../server/platform/accounts.js';
import { signedInUser, type Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { listRequestOf, mapItems, paginate, type ListRequest } from '../../server/platform/pagination.js';
import type { WorkspaceAccess } from '../workspaces/access.js';
import { estimateTokens } from './providers/mock.js';
import { monthOf, toGeneration, workspaceLimit, type EffectiveLimit } from './service.js';

type Db = Kysely<Database>;
type Deps = Pick<AppDeps, 'db' | 'config'>;

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
export async function history(deps: Deps, actor: Actor, input: ListRequest & { workspaceId: string }) {
  const { db, config } = deps;
  const { workspaceId, ...request } = input;
  const user = signedInUser(actor);
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

/** This month's usage of the workspace against its limit; a test account's own allowance when it is smaller. */
export async function usage(deps: Deps, actor: Actor, { workspace }: { workspace: WorkspaceAccess }) {
  const user = signedInUser(actor);
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

/** Platform aggregates for admins: this month's totals, by provider and model, by workspace, recent. */
export async function adminUsage({ db }: Pick<AppDeps, 'db'>) {
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
