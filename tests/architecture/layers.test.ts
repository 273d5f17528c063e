// The layers of the code base, checked on every run (type imports included): no import cycle anywhere in
// the application's code, and every folder imports only what docs/architecture.md's layer table lets it
// (LAYERS below is that table). What a lower layer needs from a higher one is handed in by a composition
// root.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCircular, parseDependencyTree } from 'dpdm';

const SOURCES = ['server', 'routers', 'db', 'jobs', 'demo', 'openapi', 'client/src'];
/** A file of the repository (dpdm also lists node: built-ins and packages). */
const OWN_FILE = /^(server|routers|db|jobs|demo|openapi|client|tests|bench|scripts)\//;

/** The composition roots: the API's (server/*.ts) and the worker's (server/worker.ts). They may import anything. */
const COMPOSITION_ROOT = /^server\/[^/]+\.ts$/;

interface Layer {
  name: string;
  files: RegExp;
  /** What its files may import besides their own folder (paths relative to the repository). */
  mayImport: RegExp[];
}

/** docs/architecture.md, "The layers": each folder and what it may import. */
export const LAYERS: Layer[] = [
  { name: 'domains', files: /^routers\//, mayImport: [/^server\/platform\//, /^db\//] },
  { name: 'jobs', files: /^jobs\//, mayImport: [/^routers\//, /^server\/platform\//, /^db\//] },
  { name: 'demo', files: /^demo\//, mayImport: [/^routers\//, /^server\/platform\//, /^db\//] },
  { name: 'openapi', files: /^openapi\//, mayImport: [/^server\/platform\//, /^db\//] },
  { name: 'platform', files: /^server\/platform\//, mayImport: [/^db\//] },
  {
    name: 'db',
    files: /^db\//,
    mayImport: [/^server\/platform\/(config|logger|bounded-cache)\.ts$/],
  },
  // The client package is built from the router's types; its declarations are checked on their own
  // (tests/client: they import only @trpc/client, @trpc/server and zod).
  { name: 'client', files: /^client\/src\//, mayImport: [/^routers\/index\.ts$/, /^server\/platform\/errors\.ts$/] },
];

interface Report {
  cycles: string[][];
  /** `importer -> imported` for every import its layer does not allow. */
  forbidden: string[];
}

const folderOf = (layer: Layer) => layer.files;

async function checkLayers(root: string, folders: string[], layers: Layer[]): Promise<Report> {
  const tree = await parseDependencyTree(
    folders.map((folder) => path.join(root, folder, '**/*.ts')),
    { context: root, tsconfig: path.join(process.cwd(), 'tsconfig.json'), transform: false, skipDynamicImports: false },
  );
  const forbidden: string[] = [];
  for (const [file, dependencies] of Object.entries(tree)) {
    if (COMPOSITION_ROOT.test(file)) continue;
    const layer = layers.find((l) => l.files.test(file));
    if (!layer) continue;
    for (const { id } of dependencies ?? []) {
      if (!id || !OWN_FILE.test(id)) continue;
      const allowed = folderOf(layer).test(id) || layer.mayImport.some((rule) => rule.test(id));
      if (!allowed) forbidden.push(`${file} -> ${id}`);
    }
  }
  return { cycles: parseCircular(tree).map(fromFirstFile), forbidden };
}

/** A cycle read from its alphabetically first file: dpdm starts it wherever its walk entered it. */
function fromFirstFile(cycle: string[]): string[] {
  const first = cycle.indexOf([...cycle].sort()[0]);
  return [...cycle.slice(first), ...cycle.slice(0, first)];
}

describe('the layers of the code base', () => {
  it('have no import cycle, and each folder imports only what the layer table allows', async () => {
    const report = await checkLayers(process.cwd(), SOURCES, LAYERS);
    expect(report.cycles.map((cycle) => cycle.join(' -> '))).toEqual([]);
    expect(report.forbidden).toEqual([]);
  }, 60_000);

  it('the check finds a cycle and imports the table forbids (deliberate fixtures)', async () => {
    const report = await checkLayers(
      path.join(process.cwd(), 'tests/fixtures/layers'),
      ['server', 'routers', 'jobs', 'demo', 'openapi'],
      LAYERS,
    );
    expect(report.cycles).toEqual([['routers/x/b.ts', 'server/platform/a.ts']]);
    expect(report.forbidden.sort()).toEqual(
      [
        'jobs/p.ts -> demo/d.ts',
        'openapi/o.ts -> routers/x/b.ts',
        'routers/x/b.ts -> jobs/p.ts',
        'server/platform/a.ts -> routers/x/b.ts',
      ].sort(),
    );
  });

  it('every folder of the application belongs to a layer or is a composition root', async () => {
    const tree = await parseDependencyTree(
      SOURCES.map((folder) => path.join(process.cwd(), folder, '**/*.ts')),
      { context: process.cwd(), tsconfig: path.join(process.cwd(), 'tsconfig.json'), transform: false },
    );
    const homeless = Object.keys(tree).filter(
      (file) => OWN_FILE.test(file) && !COMPOSITION_ROOT.test(file) && !LAYERS.some((l) => l.files.test(file)),
    );
    expect(homeless).toEqual([]);
  }, 60_000);
});
