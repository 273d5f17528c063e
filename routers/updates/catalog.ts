// The product's release catalog (spec: Versioning): static, three entries, newest first. Downloads are
// placeholders: every entry has downloadAvailable false and the download route answers 503.
export interface Release {
  version: string;
  title: string;
  date: string;
  summary: string;
  highlights: string[];
  fixes: string[];
  breakingChanges: string[];
  upgradeNotes: string[];
  docsUrl: string | null;
  downloadAvailable: false;
  download: { available: false; url: null; checksum: null; size: null; message: string };
}

const placeholder = {
  available: false,
  url: null,
  checksum: null,
  size: null,
  message: 'Secure downloads are not enabled in the demo.',
} as const;

export const RELEASES: readonly Release[] = [
  {
    version: '1.2.0',
    title: 'Updates catalog, editions and license foundation',
    date: '2026-06-02',
    summary: 'See installed and latest versions, with the editions of each plan and the groundwork for licenses.',
    highlights: [
      'Release catalog with update status',
      'Lite, Pro and Enterprise editions',
      'License status on the update page',
    ],
    fixes: ['Dates in the dashboard use the workspace time zone'],
    breakingChanges: [],
    upgradeNotes: ['Run the migrations (they run at start-up).', 'Optionally set LICENSE_KEY.'],
    docsUrl: null,
    downloadAvailable: false,
    download: { ...placeholder },
  },
  {
    version: '1.1.0',
    title: 'AI providers',
    date: '2026-03-16',
    summary: 'Text generation through two external providers, with a deterministic mock for development.',
    highlights: ['PROVIDER_A and PROVIDER_B text generation', 'Prompt templates', 'Monthly usage limits'],
    fixes: ['Long prompts no longer time out the request'],
    breakingChanges: ['AI_PROVIDER replaces the former AI_ENABLED switch.'],
    upgradeNotes: ['Set AI_PROVIDER and the key of the chosen provider.'],
    docsUrl: null,
    downloadAvailable: false,
    download: { ...placeholder },
  },
  {
    version: '1.0.0',
    title: 'Initial release',
    date: '2026-01-12',
    summary: 'Accounts, workspaces with roles, and the admin console.',
    highlights: ['Sign-in with rotating refresh tokens', 'Workspaces and invitations', 'Platform administration'],
    fixes: [],
    breakingChanges: [],
    upgradeNotes: [],
    docsUrl: null,
    downloadAvailable: false,
    download: { ...placeholder },
  },
];

/** Numeric comparison of x.y.z versions. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((n) => Number.parseInt(n, 10) || 0);
  const pb = b.split('.').map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

export const latestRelease = (): Release => [...RELEASES].sort((a, b) => compareVersions(b.version, a.version))[0];
