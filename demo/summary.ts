// What demo:seed and demo:reset did (seed.ts, reset.ts), and how the command prints it (cli.ts).
import type { WorkspaceRole } from '../db/schema.js';
import type { PlannedAccount, ResolvedAccount } from './data.js';

export interface DemoAccountSummary {
  email: string;
  role: 'DEMO_ADMIN' | WorkspaceRole;
  state: 'created' | 'present' | 'restored' | 'skipped';
  /** The setting that holds the password (never the password itself). */
  passwordSetting: PlannedAccount['passwordSetting'];
  note?: string;
}

export type DemoRowKind = 'accounts' | 'workspaces' | 'members' | 'samples' | 'webhooks' | 'deliveries';

export interface DemoSummary {
  action: 'seed' | 'reset';
  workspace: { id: string; name: string };
  accounts: DemoAccountSummary[];
  /** seed: rows created (missing ones only); reset: demo rows written back as seeded. */
  written: Record<DemoRowKind, number>;
  /** reset: rows of the demo workspace and demo accounts that were not part of the demo data. */
  removed: Record<string, number>;
  /** seed: whether anything was created; reset: whether anything was removed. */
  changed: boolean;
  notes: string[];
}

export const noRows = (): Record<DemoRowKind, number> => ({
  accounts: 0,
  workspaces: 0,
  members: 0,
  samples: 0,
  webhooks: 0,
  deliveries: 0,
});

export function accountSummary(a: ResolvedAccount, state: DemoAccountSummary['state']): DemoAccountSummary {
  return {
    email: a.email,
    role: a.role ?? 'DEMO_ADMIN',
    state,
    passwordSetting: a.passwordSetting,
    ...(a.state === 'skipped' && {
      note: 'the address belongs to an account the demo seed did not create; left as it is',
    }),
  };
}

export function ignoredNotes(ignored: string[]) {
  return ignored.length
    ? [
        `AI_DEMO_RESTRICTED_EMAILS names ${ignored.length} more address(es) than the four roles; not seeded: ${ignored.join(', ')}`,
      ]
    : [];
}

const ROW_LABELS: Record<string, [string, string]> = {
  accounts: ['account', 'accounts'],
  workspaces: ['workspace', 'workspaces'],
  members: ['membership', 'memberships'],
  samples: ['sample generation', 'sample generations'],
  generations: ['generation', 'generations'],
  webhooks: ['webhook', 'webhooks'],
  deliveries: ['webhook delivery', 'webhook deliveries'],
  openLinks: ['open reset or verification link', 'open reset or verification links'],
  invitations: ['invitation', 'invitations'],
  apiKeys: ['API key', 'API keys'],
  files: ['upload', 'uploads'],
  payments: ['payment', 'payments'],
  subscriptions: ['subscription', 'subscriptions'],
  usageCounters: ['usage counter', 'usage counters'],
  domainEvents: ['domain event', 'domain events'],
};

/** What a command prints: counts, addresses and setting names, never a password or a secret. */
export function formatDemoSummary(s: DemoSummary): string[] {
  const counts = (r: Record<string, number>) =>
    Object.entries(r)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => {
        const [one, many] = ROW_LABELS[k] ?? [k, k];
        return `${n} ${n === 1 ? one : many}`;
      })
      .join(', ');
  const lines: string[] = [];
  if (s.action === 'seed') {
    const created = counts(s.written);
    lines.push(
      !s.changed
        ? 'demo:seed: the demo data is already in place; nothing changed (npm run demo:reset undoes changes made to it).'
        : created
          ? `demo:seed created ${created}.`
          : 'demo:seed created nothing; it changed what the notes say.',
    );
  } else {
    lines.push(`demo:reset removed ${s.changed ? counts(s.removed) : 'nothing'} and wrote back ${counts(s.written)}.`);
  }
  lines.push(`  workspace  "${s.workspace.name}" (${s.workspace.id})`);
  for (const a of s.accounts) {
    const password = a.state === 'skipped' ? '' : ` (password: ${a.passwordSetting})`;
    lines.push(`  ${a.role.padEnd(10)} ${a.email}  ${a.state}${password}${a.note ? `: ${a.note}` : ''}`);
  }
  for (const note of s.notes) lines.push(`  note: ${note}`);
  return lines;
}
