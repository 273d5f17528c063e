// AI text generation: prompt templates (five seeded here, once), the generations, and the monthly
// counters that limits are checked and counted against atomically. Frozen once landed.
import { sql, type Kysely } from 'kysely';

const TEMPLATES = [
  {
    slug: 'blog-outline',
    name: 'Blog post outline',
    description: 'A structured outline for a blog post, with sections and key points.',
    category: 'Writing',
    body: 'Write an outline for a blog post about {{topic}} for {{audience}}. Give a title, an introduction, four to six sections with two or three key points each, and a conclusion.',
    variables: ['topic', 'audience'],
  },
  {
    slug: 'product-description',
    name: 'Product description',
    description: 'A persuasive product description from a name and its features.',
    category: 'Marketing',
    body: 'Write a product description of about 120 words for {{product}}. Its key features are: {{features}}. Use a {{tone}} tone and end with a call to action.',
    variables: ['product', 'features', 'tone'],
  },
  {
    slug: 'email-reply',
    name: 'E-mail reply',
    description: 'A clear, polite reply to an e-mail you received.',
    category: 'Communication',
    body: 'Write a reply to this e-mail:\n\n{{email}}\n\nThe reply should {{goal}}. Keep it short, polite and clear.',
    variables: ['email', 'goal'],
  },
  {
    slug: 'summary',
    name: 'Summary',
    description: 'A summary of a text in a few bullet points.',
    category: 'Analysis',
    body: 'Summarise the following text in {{points}} bullet points, keeping names and figures exact:\n\n{{text}}',
    variables: ['points', 'text'],
  },
  {
    slug: 'tweet-thread',
    name: 'Tweet thread',
    description: 'A thread of short posts that explains a topic step by step.',
    category: 'Social',
    body: 'Write a thread of {{count}} posts about {{topic}}. Each post under 280 characters; the first one hooks the reader, the last one invites a reply.',
    variables: ['count', 'topic'],
  },
  {
    slug: 'meeting-notes',
    name: 'Meeting notes',
    description: 'Decisions and action items from raw meeting notes.',
    category: 'Productivity',
    body: 'From these meeting notes, list the decisions taken and the action items with their owners:\n\n{{notes}}',
    variables: ['notes'],
  },
];

export async function up(db: Kysely<any>): Promise<void> {
  const now = sql`now()`;

  await db.schema
    .createTable('ai_templates')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('variables', 'jsonb', (c) => c.notNull())
    .addColumn('is_active', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  for (const t of TEMPLATES) {
    await db
      .insertInto('ai_templates')
      .values({ ...t, variables: JSON.stringify(t.variables) })
      .execute();
  }

  await db.schema
    .createTable('ai_generations')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('user_id', 'uuid', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('template_id', 'uuid', (c) => c.references('ai_templates.id').onDelete('set null'))
    .addColumn('provider', 'text', (c) => c.notNull().check(sql`provider in ('MOCK', 'PROVIDER_A', 'PROVIDER_B')`))
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('prompt', 'text', (c) => c.notNull())
    .addColumn('system_prompt', 'text')
    .addColumn('temperature', 'real')
    .addColumn('output', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('SUCCEEDED', 'FAILED')`))
    .addColumn('error_code', 'text')
    .addColumn('prompt_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('duration_ms', 'integer', (c) => c.notNull().defaultTo(0))
    // Sample history shown to demo accounts; never counted as usage.
    .addColumn('is_sample', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .execute();
  // History pages walk this index (page 500 costs about what page 1 does: see routers/ai/service.ts).
  await db.schema
    .createIndex('ai_generations_workspace_idx')
    .on('ai_generations')
    .columns(['workspace_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('ai_generations_created_idx')
    .on('ai_generations')
    .columns(['created_at', 'id'])
    .execute();

  // One row per workspace and calendar month (UTC): checked and counted in one statement.
  await db.schema
    .createTable('ai_usage_counters')
    .addColumn('workspace_id', 'uuid', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('period', 'date', (c) => c.notNull())
    .addColumn('generations', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('ai_usage_counters_pkey', ['workspace_id', 'period'])
    .execute();

  // The monthly cap of test accounts (AI_TEST_USER_EMAILS) counts per user, across workspaces.
  await db.schema
    .createTable('ai_user_usage_counters')
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('period', 'date', (c) => c.notNull())
    .addColumn('generations', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('ai_user_usage_counters_pkey', ['user_id', 'period'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['ai_user_usage_counters', 'ai_usage_counters', 'ai_generations', 'ai_templates']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
