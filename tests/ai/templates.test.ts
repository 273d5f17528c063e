// Prompt templates: the list of active templates and one by id, route precedence of the static /ai paths
// over /ai/templates/{templateId}, and generating with a template (its {{variables}} filled from the
// request; a missing one is a 400 naming it).
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, registerAndLogin, type Session } from '../helpers/http.js';
import { generate, generationRow, tag, uniquePrompt, usageOf, UUID_RE } from './helpers.js';

let app: TestApp;
let user: Session;

const TEMPLATE_FIELDS = ['id', 'slug', 'name', 'description', 'category', 'body', 'variables'].sort();
/** At least these useful templates are seeded. */
const SEEDED_SLUGS = ['blog-outline', 'product-description', 'email-reply', 'summary', 'tweet-thread'];

/** Templates this file inserts itself (the seeded ones are shared by every test file: never changed). */
const ownTemplateIds: string[] = [];

async function insertTemplate(fields: { body?: string; variables?: string[]; is_active?: boolean } = {}) {
  const slug = `test-template-${tag()}`;
  const row = await app.deps.db
    .insertInto('ai_templates')
    .values({
      slug,
      name: `Test template ${slug}`,
      description: 'A template inserted by tests/ai/templates.test.ts.',
      category: 'Testing',
      body: fields.body ?? 'Write a limerick about {{subject}}.',
      variables: JSON.stringify(fields.variables ?? ['subject']),
      is_active: fields.is_active ?? true,
    })
    .returning(['id', 'slug'])
    .executeTakeFirstOrThrow();
  ownTemplateIds.push(row.id);
  return row;
}

async function listTemplates(token = user.accessToken) {
  const res = await app.api('GET', '/ai/templates', { token });
  expect(res.status, res.text).toBe(200);
  return res.body.items as Array<{
    id: string;
    slug: string;
    name: string;
    description: string;
    category: string;
    body: string;
    variables: string[];
  }>;
}

async function seeded(slug: string) {
  const t = (await listTemplates()).find((x) => x.slug === slug);
  expect(t, `seeded template ${slug}`).toBeDefined();
  return t!;
}

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  user = await registerAndLogin(app.api, { prefix: 'ai-tpl' });
});
afterAll(async () => {
  if (app && ownTemplateIds.length) {
    await app.deps.db.deleteFrom('ai_templates').where('id', 'in', ownTemplateIds).execute();
  }
  await app?.close();
});

describe('GET /ai/templates', () => {
  it('lists at least five seeded templates, each with every field filled and {{variables}} that appear in its body', async () => {
    const items = await listTemplates();
    expect(items.length).toBeGreaterThanOrEqual(5);
    const slugs = items.map((t) => t.slug);
    for (const slug of SEEDED_SLUGS) expect(slugs).toContain(slug);
    for (const t of items) {
      expect(Object.keys(t).sort()).toEqual(TEMPLATE_FIELDS);
      expect(t.id).toMatch(UUID_RE);
      for (const field of ['slug', 'name', 'description', 'category', 'body'] as const) {
        expect(typeof t[field], `${t.slug}.${field}`).toBe('string');
        expect(t[field].length, `${t.slug}.${field}`).toBeGreaterThan(0);
      }
      expect(Array.isArray(t.variables)).toBe(true);
      if (SEEDED_SLUGS.includes(t.slug)) expect(t.variables.length, `${t.slug} has variables`).toBeGreaterThan(0);
      for (const v of t.variables)
        expect(t.body, `${t.slug} uses {{${v}}}`).toMatch(new RegExp(`\\{\\{\\s*${v}\\s*\\}\\}`));
    }
    expect(new Set(items.map((t) => t.id)).size).toBe(items.length);
  });

  it('lists only active templates: a template disappears from the list once it is deactivated', async () => {
    const own = await insertTemplate();
    expect((await listTemplates()).map((t) => t.id)).toContain(own.id);

    await app.deps.db.updateTable('ai_templates').set({ is_active: false }).where('id', '=', own.id).execute();
    expect((await listTemplates()).map((t) => t.id)).not.toContain(own.id);
    expectError(await app.api('GET', `/ai/templates/${own.id}`, { token: user.accessToken }), 404, 'NOT_FOUND');
  });

  it('needs a bearer token', async () => {
    expectError(await app.api('GET', '/ai/templates'), 401, 'UNAUTHORIZED');
    expectError(await app.api('GET', `/ai/templates/${crypto.randomUUID()}`), 401, 'UNAUTHORIZED');
  });
});

describe('GET /ai/templates/:templateId', () => {
  it('answers one template with the same fields as the list', async () => {
    const listed = await seeded('product-description');
    const res = await app.api('GET', `/ai/templates/${listed.id}`, { token: user.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual(listed);
    expect(res.body.variables).toEqual(['product', 'features', 'tone']);
  });

  it('answers a friendly 404 NOT_FOUND for an unknown template id', async () => {
    const err = expectError(
      await app.api('GET', `/ai/templates/${crypto.randomUUID()}`, { token: user.accessToken }),
      404,
      'NOT_FOUND',
    );
    expect(err.message).toMatch(/template/i);
  });

  it('answers 400 BAD_REQUEST for a template id that is not a UUID', async () => {
    expectError(await app.api('GET', '/ai/templates/not-a-uuid', { token: user.accessToken }), 400, 'BAD_REQUEST');
    expectError(await app.api('GET', '/ai/templates/12345', { token: user.accessToken }), 400, 'BAD_REQUEST');
  });
});

describe('route precedence of the static /ai paths', () => {
  it('GET /ai/templates answers the list, never a template lookup', async () => {
    const res = await app.api('GET', '/ai/templates', { token: user.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body)).toEqual(['items']);
    expect(Array.isArray(res.body.items)).toBe(true);
  });

  it('GET /ai/provider-status answers the provider status, never a template lookup', async () => {
    const res = await app.api('GET', '/ai/provider-status', { token: user.accessToken });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ provider: 'MOCK', model: 'mock-writer-1', configured: true });
    for (const flag of ['demoRestricted', 'blockRealGeneration', 'showSampleHistory'])
      expect(typeof res.body[flag], flag).toBe('boolean');
    expect(res.body.id).toBeUndefined();
    expect(res.body.items).toBeUndefined();
  });
});

describe('generating with a template', () => {
  it('without variables, fills every {{variable}} of the template with the prompt and stores the template id', async () => {
    const template = await seeded('blog-outline');
    const prompt = uniquePrompt('remote onboarding');
    const res = await generate(app, user.accessToken, { prompt, templateId: template.id });
    expect(res.status, res.text).toBe(200);
    const expected = template.body.replaceAll('{{topic}}', prompt).replaceAll('{{audience}}', prompt);
    expect(res.body.prompt).toBe(expected);
    expect(res.body.prompt).not.toContain('{{');
    expect(res.body.templateId).toBe(template.id);

    const row = await generationRow(app, res.body.id);
    expect(row.prompt).toBe(expected);
    expect(row.template_id).toBe(template.id);
  });

  it('with every variable given, stores the filled body followed by the prompt', async () => {
    const template = await seeded('product-description');
    const product = `Standing desk ${tag()}`;
    const prompt = uniquePrompt('Mention the ten-year warranty');
    const res = await generate(app, user.accessToken, {
      prompt,
      templateId: template.id,
      variables: { product, features: 'quiet motor, four memory presets', tone: 'friendly' },
    });
    expect(res.status, res.text).toBe(200);
    const filled = template.body
      .replace('{{product}}', product)
      .replace('{{features}}', 'quiet motor, four memory presets')
      .replace('{{tone}}', 'friendly');
    const row = await generationRow(app, res.body.id);
    expect(row.prompt).toContain(filled);
    expect(row.prompt).toContain(prompt);
    expect(row.prompt).not.toContain('{{');
    expect(row.template_id).toBe(template.id);
    expect(res.body.prompt).toBe(row.prompt);
  });

  it('with a variable missing, answers 400 naming it in issues and counts nothing', async () => {
    const template = await seeded('blog-outline');
    const before = await usageOf(app, user.accessToken);
    const res = await generate(app, user.accessToken, {
      prompt: uniquePrompt(),
      templateId: template.id,
      variables: { topic: 'remote onboarding' },
    });
    const err = expectError(res, 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toEqual(['variables.audience']);
    expect(err.message).toContain('audience');
    expect((await usageOf(app, user.accessToken)).used).toBe(before.used);
  });

  it('names every missing variable, and a blank value counts as missing', async () => {
    const template = await seeded('product-description');
    const res = await generate(app, user.accessToken, {
      prompt: uniquePrompt(),
      templateId: template.id,
      variables: { product: 'Desk', tone: '   ' },
    });
    const err = expectError(res, 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path).sort()).toEqual(['variables.features', 'variables.tone']);
  });

  it('with a template of our own, fills its single variable from the prompt', async () => {
    const own = await insertTemplate({
      body: 'Write a limerick about {{ subject }} in English.',
      variables: ['subject'],
    });
    const prompt = uniquePrompt('a cat');
    const res = await generate(app, user.accessToken, { prompt, templateId: own.id });
    expect(res.status, res.text).toBe(200);
    expect(res.body.prompt).toBe(`Write a limerick about ${prompt} in English.`);
  });

  it('answers 404 NOT_FOUND for an unknown template and for an inactive one, counting nothing', async () => {
    const before = await usageOf(app, user.accessToken);
    expectError(
      await generate(app, user.accessToken, { prompt: uniquePrompt(), templateId: crypto.randomUUID() }),
      404,
      'NOT_FOUND',
    );
    const inactive = await insertTemplate({ is_active: false });
    expectError(
      await generate(app, user.accessToken, { prompt: uniquePrompt(), templateId: inactive.id }),
      404,
      'NOT_FOUND',
    );
    expect((await usageOf(app, user.accessToken)).used).toBe(before.used);
  });

  it('answers 400 for a templateId that is not a UUID', async () => {
    const err = expectError(
      await generate(app, user.accessToken, { prompt: uniquePrompt(), templateId: 'blog-outline' }),
      400,
      'BAD_REQUEST',
    );
    expect(err.issues?.map((i) => i.path)).toContain('templateId');
  });
});
