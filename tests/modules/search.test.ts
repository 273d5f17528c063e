// GET /search?q=&workspaceId= (docs/decisions.md, "Search"): Postgres full-text search over the
// workspace's generations and the (shared) active templates, and a name/e-mail match over its members.
// Results come only from the named workspace; callers need workspace.read there; q is 2 to 200 characters.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, login, registerAndLogin, uniqueEmail, type Session } from '../helpers/http.js';
import { inviteAndJoin, registerAs, invite } from '../workspaces/helpers.js';

type Result = { type: 'generation' | 'template' | 'member'; id: string; title: string; snippet: string };

const tag = () => crypto.randomBytes(4).toString('hex');
/** A word no other test uses (letters only, so every parser keeps it whole). */
const word = (prefix: string) =>
  `${prefix}${crypto
    .randomBytes(6)
    .toString('hex')
    .replace(/[0-9]/g, (d) => 'ghijklmnop'[Number(d)])}`;

let app: TestApp;
let owner: Session;
let viewer: Session;
let outsider: Session;
/** Member of workspace A whose name carries MEMBER_WORD. */
let named: Session;
/** Owner of workspace B, which has data matching the same words. */
let other: Session;

const GEN_WORD = word('zebra');
const MEMBER_WORD = word('quillon');
const TEMPLATE_WORD = word('xylograph');

let genA: { id: string; prompt: string; output: string };
let genB: { id: string };
let templateId: string;
let inactiveTemplateId: string;

async function generate(s: Session, prompt: string, workspaceId: string) {
  const res = await app.api('POST', '/ai/generate', { token: s.accessToken, body: { prompt, workspaceId } });
  if (res.status !== 200) throw new Error(`generate failed: ${res.status} ${res.text}`);
  return res.body as { id: string; prompt: string; output: string };
}

async function insertTemplate(name: string, isActive: boolean) {
  const row = await app.deps.db
    .insertInto('ai_templates')
    .values({
      slug: `search-test-${tag()}`,
      name,
      description: 'A template inserted by tests/modules/search.test.ts.',
      category: 'Testing',
      body: 'Write about {{subject}}.',
      variables: JSON.stringify(['subject']),
      is_active: isActive,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

async function search(q: string, opts: { token?: string; workspaceId?: string | null } = {}) {
  const params = new URLSearchParams({ q });
  const ws = opts.workspaceId === undefined ? owner.workspaceId : opts.workspaceId;
  if (ws !== null) params.set('workspaceId', ws);
  return app.api('GET', `/search?${params.toString()}`, { token: opts.token ?? owner.accessToken });
}

async function found(q: string, opts: { token?: string; workspaceId?: string | null } = {}): Promise<Result[]> {
  const res = await search(q, opts);
  expect(res.status, res.text).toBe(200);
  expect(Object.keys(res.body)).toEqual(['items']);
  return res.body.items;
}

beforeAll(async () => {
  app = await startTestApp({ RATE_LIMIT_ENABLED: 'false' });
  owner = await registerAndLogin(app.api, { prefix: 'search-owner', name: 'Search Owner' });
  named = await registerAs(app, uniqueEmail('search-named'), `Ottilie ${MEMBER_WORD}`);
  const { token } = await invite(app, owner.accessToken, owner.workspaceId, named.email, 'MEMBER');
  const accepted = await app.api('POST', '/invitations/accept', { token: named.accessToken, body: { token } });
  if (accepted.status !== 200) throw new Error(`accept failed: ${accepted.status} ${accepted.text}`);
  viewer = await inviteAndJoin(app, owner.accessToken, owner.workspaceId, 'VIEWER', 'search-viewer');
  outsider = await registerAndLogin(app.api, { prefix: 'search-outsider' });
  // Workspace B: the same words in a generation and in its owner's name.
  other = await registerAndLogin(app.api, { prefix: 'search-other', name: `Bartholomew ${MEMBER_WORD}` });

  genA = await generate(owner, `Write a slogan for the ${GEN_WORD} bakery`, owner.workspaceId);
  await generate(owner, 'Describe a quiet harbour at dawn', owner.workspaceId);
  genB = await generate(other, `Write a slogan for the ${GEN_WORD} bakery`, other.workspaceId);

  templateId = await insertTemplate(`${TEMPLATE_WORD} briefing`, true);
  inactiveTemplateId = await insertTemplate(`${TEMPLATE_WORD} retired`, false);
});
afterAll(async () => {
  if (app)
    await app.deps.db
      .deleteFrom('ai_templates')
      .where('id', 'in', [templateId, inactiveTemplateId].filter(Boolean))
      .execute();
  await app?.close();
});

describe('generations', () => {
  it('finds a generation by a word of its prompt, with the prompt as title and the output as snippet', async () => {
    const items = await found(GEN_WORD);
    const generations = items.filter((i) => i.type === 'generation');
    expect(generations.map((g) => g.id)).toEqual([genA.id]);
    expect(generations[0]).toEqual({
      type: 'generation',
      id: genA.id,
      title: genA.prompt.slice(0, 80),
      snippet: genA.output.slice(0, 200),
    });
  });

  it('matches regardless of letter case', async () => {
    const items = await found(GEN_WORD.toUpperCase());
    expect(items.filter((i) => i.type === 'generation').map((g) => g.id)).toEqual([genA.id]);
  });

  it('finds a generation by a word of its output (not of its prompt)', async () => {
    // The MOCK output holds some of its fixed sentences: take a long word of it that the prompt lacks.
    const w = (genA.output.toLowerCase().match(/[a-z]{6,}/g) ?? []).find((x) => !genA.prompt.toLowerCase().includes(x));
    expect(w, genA.output).toBeDefined();
    const items = await found(w!);
    const ids = items.filter((i) => i.type === 'generation').map((g) => g.id);
    expect(ids).toContain(genA.id);
    // Every generation answered is of this workspace and holds the word.
    const rows = await app.deps.db
      .selectFrom('ai_generations')
      .select(['id', 'workspace_id', 'prompt', 'output'])
      .where('id', 'in', ids)
      .execute();
    for (const r of rows) {
      expect(r.workspace_id).toBe(owner.workspaceId);
      expect(`${r.prompt} ${r.output}`.toLowerCase()).toMatch(new RegExp(`\\b${w}\\b`));
    }
  });

  it("never answers another workspace's generation, though it matches", async () => {
    const a = await found(GEN_WORD);
    expect(a.map((i) => i.id)).not.toContain(genB.id);
    const b = await found(GEN_WORD, { token: other.accessToken, workspaceId: other.workspaceId });
    expect(b.filter((i) => i.type === 'generation').map((g) => g.id)).toEqual([genB.id]);
  });

  it('needs every word of a multi-word query', async () => {
    expect((await found(`${GEN_WORD} bakery`)).filter((i) => i.type === 'generation').map((g) => g.id)).toEqual([
      genA.id,
    ]);
    expect((await found(`${GEN_WORD} ${word('absent')}`)).filter((i) => i.type === 'generation')).toEqual([]);
  });
});

describe('members', () => {
  it('finds a member by part of the name, with the e-mail and role as snippet', async () => {
    const items = await found(MEMBER_WORD.slice(0, 12));
    expect(items.filter((i) => i.type === 'member')).toEqual([
      { type: 'member', id: named.userId, title: `Ottilie ${MEMBER_WORD}`, snippet: `${named.email} (MEMBER)` },
    ]);
  });

  it('finds a member by part of the e-mail address', async () => {
    const local = viewer.email.split('@')[0];
    const items = await found(local.toUpperCase());
    expect(items.filter((i) => i.type === 'member').map((m) => m.id)).toEqual([viewer.userId]);
  });

  it('never answers a member of another workspace with the same name', async () => {
    const items = await found(MEMBER_WORD);
    expect(items.map((i) => i.id)).not.toContain(other.userId);
    const b = await found(MEMBER_WORD, { token: other.accessToken, workspaceId: other.workspaceId });
    expect(b.filter((i) => i.type === 'member').map((m) => m.id)).toEqual([other.userId]);
  });

  it('takes % and _ literally, not as wildcards that match every member', async () => {
    for (const q of ['%%', '__', '%_%']) {
      const items = await found(q);
      expect(
        items.filter((i) => i.type === 'member'),
        q,
      ).toEqual([]);
    }
  });
});

describe('templates', () => {
  it('finds an active template by a word of its name', async () => {
    const items = await found(TEMPLATE_WORD);
    expect(items.filter((i) => i.type === 'template')).toEqual([
      {
        type: 'template',
        id: templateId,
        title: `${TEMPLATE_WORD} briefing`,
        snippet: 'A template inserted by tests/modules/search.test.ts.',
      },
    ]);
  });

  it('finds a seeded template by its name', async () => {
    const items = await found('meeting notes');
    const titles = items.filter((i) => i.type === 'template').map((t) => t.title);
    expect(titles).toContain('Meeting notes');
  });

  it('leaves out a deactivated template', async () => {
    const items = await found(`${TEMPLATE_WORD} retired`);
    expect(items.map((i) => i.id)).not.toContain(inactiveTemplateId);
  });
});

describe('the query and the workspace', () => {
  it('answers an empty list when nothing matches', async () => {
    expect(await found(word('nothingmatches'))).toEqual([]);
  });

  it('answers an empty list, not an error, for a query of punctuation only', async () => {
    expect(await found('!!&|')).toEqual([]);
  });

  it("without workspaceId searches the caller's active workspace", async () => {
    const items = await found(GEN_WORD, { workspaceId: null });
    expect(items.filter((i) => i.type === 'generation').map((g) => g.id)).toEqual([genA.id]);
  });

  it.each([
    ['an empty q', ''],
    ['a blank q', '   '],
    ['a one-character q', 'z'],
    ['a q over 200 characters', 'a'.repeat(201)],
  ])('refuses %s with 400 BAD_REQUEST', async (_label, q) => {
    const err = expectError(await search(q), 400, 'BAD_REQUEST');
    expect(err.issues?.map((i) => i.path)).toContain('q');
  });

  it('refuses a missing q with 400 BAD_REQUEST', async () => {
    expectError(
      await app.api('GET', `/search?workspaceId=${owner.workspaceId}`, { token: owner.accessToken }),
      400,
      'BAD_REQUEST',
    );
  });

  it('accepts a q of exactly 200 characters', async () => {
    expect(await found('b'.repeat(200))).toEqual([]);
  });

  it('refuses a workspaceId that is not a UUID with 400', async () => {
    expectError(
      await app.api('GET', `/search?q=${GEN_WORD}&workspaceId=not-a-uuid`, { token: owner.accessToken }),
      400,
      'BAD_REQUEST',
    );
  });
});

describe('who may search', () => {
  it('a VIEWER of the workspace may (workspace.read)', async () => {
    const items = await found(GEN_WORD, { token: viewer.accessToken });
    expect(items.filter((i) => i.type === 'generation').map((g) => g.id)).toEqual([genA.id]);
  });

  it('a non-member naming the workspace gets 404 NOT_FOUND and nothing of it', async () => {
    const res = await search(GEN_WORD, { token: outsider.accessToken });
    expectError(res, 404, 'NOT_FOUND');
    expect(res.text).not.toContain(genA.id);
    expect(res.text).not.toContain(GEN_WORD);
  });

  it('an unknown workspace id is 404 NOT_FOUND, like a foreign one', async () => {
    expectError(await search(GEN_WORD, { workspaceId: crypto.randomUUID() }), 404, 'NOT_FOUND');
  });

  it('a platform admin who is not a member is refused as well', async () => {
    const admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
    expectError(await search(GEN_WORD, { token: admin.accessToken }), 404, 'NOT_FOUND');
  });

  it('an anonymous caller gets 401 UNAUTHORIZED', async () => {
    expectError(await app.api('GET', `/search?q=${GEN_WORD}&workspaceId=${owner.workspaceId}`), 401, 'UNAUTHORIZED');
    expectError(await app.api('GET', `/search?q=${GEN_WORD}`), 401, 'UNAUTHORIZED');
  });

  it('a member of a suspended workspace gets 403 WORKSPACE_UNAVAILABLE', async () => {
    const admin = await login(app.api, TEST_ADMIN.email, TEST_ADMIN.password);
    const s = await registerAndLogin(app.api, { prefix: 'search-suspended' });
    await generate(s, `Notes on ${GEN_WORD}`, s.workspaceId);
    const moved = await app.api('POST', `/admin/workspaces/${s.workspaceId}/suspend`, { token: admin.accessToken });
    expect(moved.status, moved.text).toBe(200);
    expectError(
      await search(GEN_WORD, { token: s.accessToken, workspaceId: s.workspaceId }),
      403,
      'WORKSPACE_UNAVAILABLE',
    );
  });
});
