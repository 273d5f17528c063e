// The layers of the code base, checked on every run (type imports included): no import cycle anywhere in
// the application's code, and the platform (server/platform/), db/ and openapi/ import no domain
// (routers/), job (jobs/), demo data (demo/) nor the composition root (server/*.ts): what they need from a
// domain is handed in by the composition root. docs/architecture.md explains the layers.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCircular, parseDependencyTree } from 'dpdm';

const SOURCES = ['server', 'routers', 'db', 'jobs', 'demo', 'openapi', 'client/src'];
/** Folders below the domains, and what they may never import. */
const LOWER_LAYERS = ['server/platform/', 'db/', 'openapi/'];
const UPPER_LAYERS = [/^routers\//, /^jobs\//, /^demo\//, /^server\/[^/]+\.ts$/];

interface Report {
  cycles: string[][];
  /** `importer -> imported` for every lower-layer file importing an upper layer. */
  upwardImports: string[];
}

async function checkLayers(root: string, folders: string[]): Promise<Report> {
  const tree = await parseDependencyTree(
    folders.map((folder) => path.join(root, folder, '**/*.ts')),
    { context: root, tsconfig: path.join(process.cwd(), 'tsconfig.json'), transform: false, skipDynamicImports: false },
  );
  const upwardImports: string[] = [];
  for (const [file, dependencies] of Object.entries(tree)) {
    if (!LOWER_LAYERS.some((layer) => file.startsWith(layer))) continue;
    for (const dependency of dependencies ?? []) {
      if (dependency.id && UPPER_LAYERS.some((layer) => layer.test(dependency.id!)))
        upwardImports.push(`${file} -> ${dependency.id}`);
    }
  }
  return { cycles: parseCircular(tree).map(fromFirstFile), upwardImports };
}

/** A cycle read from its alphabetically first file: dpdm starts it wherever its walk entered it. */
function fromFirstFile(cycle: string[]): string[] {
  const first = cycle.indexOf([...cycle].sort()[0]);
  return [...cycle.slice(first), ...cycle.slice(0, first)];
}

describe('the layers of the code base', () => {
  it('have no import cycle, and the platform, db/ and openapi/ import no domain, job or composition root', async () => {
    const report = await checkLayers(process.cwd(), SOURCES);
    expect(report.cycles.map((cycle) => cycle.join(' -> '))).toEqual([]);
    expect(report.upwardImports).toEqual([]);
  }, 60_000);

  it('the check finds a cycle and a platform file importing a domain (a deliberate fixture)', async () => {
    const report = await checkLayers(path.join(process.cwd(), 'tests/fixtures/layers'), ['server', 'routers']);
    expect(report.cycles).toEqual([['routers/x/b.ts', 'server/platform/a.ts']]);
    expect(report.upwardImports).toEqual(['server/platform/a.ts -> routers/x/b.ts']);
  });
});
