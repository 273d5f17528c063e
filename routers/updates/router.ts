// Product updates (authenticated) and the admin view of the catalog. `/latest` is declared before
// `/{version}`: the REST matcher takes the first match.
import { z } from 'zod';
import type { Config } from '../../server/platform/config.js';
import { AppError } from '../../server/platform/errors.js';
import { adminProcedure, authedProcedure, router } from '../../server/platform/trpc.js';
import { RELEASES, compareVersions, latestRelease, type Release } from './catalog.js';

const tags = ['Updates'];

const releaseOutput = z.object({
  version: z.string(),
  title: z.string(),
  date: z.string(),
  summary: z.string(),
  highlights: z.array(z.string()),
  fixes: z.array(z.string()),
  breakingChanges: z.array(z.string()),
  upgradeNotes: z.array(z.string()),
  docsUrl: z.string().nullable(),
  downloadAvailable: z.literal(false),
  download: z.object({ available: z.literal(false), url: z.null(), checksum: z.null(), size: z.null(), message: z.string() }),
});
const listOutput = z.object({ items: z.array(releaseOutput) });
const versionInput = z.object({ version: z.string().max(40) });

const VERSION_LIKE = /^[A-Za-z0-9.+-]{1,20}$/;

function findRelease(version: string): Release {
  const release = RELEASES.find((r) => r.version === version);
  if (!release) {
    // Only something shaped like a version is repeated back: anything else the caller put in the path
    // (a pasted token, say) stays out of answers, logs and monitoring records.
    const named = VERSION_LIKE.test(version) ? `release ${version}` : 'such release';
    throw new AppError('NOT_FOUND', `There is no ${named} in the catalog. GET /updates/releases lists the releases.`);
  }
  return release;
}

/** The update page's status: installed vs latest, and what the license says (never the key). */
export function updateStatus(config: Config) {
  const latest = latestRelease();
  const licensed = Boolean(config.LICENSE_KEY);
  const updateAvailable = config.UPDATE_CHECK_ENABLED && compareVersions(latest.version, config.SERVICE_VERSION) > 0;
  const licenseStatus: 'ACTIVE' | 'REQUIRED' | 'NOT_REQUIRED' = licensed ? 'ACTIVE' : config.LICENSE_ENFORCEMENT_ENABLED ? 'REQUIRED' : 'NOT_REQUIRED';
  const message = !config.UPDATE_CHECK_ENABLED
    ? 'Update checks are disabled (UPDATE_CHECK_ENABLED=false).'
    : updateAvailable
      ? `Version ${latest.version} is available; you run ${config.SERVICE_VERSION}.`
      : `You run the latest version (${config.SERVICE_VERSION}).`;
  return {
    installedVersion: config.SERVICE_VERSION,
    latestVersion: latest.version,
    updateAvailable,
    channel: config.UPDATE_CHANNEL,
    checkEnabled: config.UPDATE_CHECK_ENABLED,
    provider: config.UPDATE_PROVIDER,
    licenseEnforcementEnabled: config.LICENSE_ENFORCEMENT_ENABLED,
    licenseStatus,
    updateAccess: licenseStatus === 'REQUIRED' ? ('LICENSE_REQUIRED' as const) : ('ACTIVE' as const),
    message:
      licenseStatus === 'REQUIRED'
        ? `${message} A license is required for update access; the application keeps working without one.`
        : licenseStatus === 'NOT_REQUIRED'
          ? `${message} Licenses are optional in this edition (foundation).`
          : message,
    supportEmail: config.UPDATE_SUPPORT_EMAIL,
  };
}

export const updatesRouter = router({
  status: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/updates/status', tags, summary: 'Installed vs latest version, license and update access' } })
    .input(z.void())
    .output(
      z.object({
        installedVersion: z.string(),
        latestVersion: z.string(),
        updateAvailable: z.boolean(),
        channel: z.string(),
        checkEnabled: z.boolean(),
        provider: z.string(),
        licenseEnforcementEnabled: z.boolean(),
        licenseStatus: z.enum(['ACTIVE', 'REQUIRED', 'NOT_REQUIRED']),
        updateAccess: z.enum(['ACTIVE', 'LICENSE_REQUIRED']),
        message: z.string(),
        supportEmail: z.string(),
      }),
    )
    .query(({ ctx }) => updateStatus(ctx.config)),

  releases: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/updates/releases', tags, summary: 'Stable releases, newest first' } })
    .input(z.void())
    .output(listOutput)
    .query(() => ({ items: [...RELEASES] })),

  latest: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/updates/releases/latest', tags, summary: 'The latest stable release' } })
    .input(z.void())
    .output(releaseOutput)
    .query(() => latestRelease()),

  release: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/updates/releases/{version}', tags, summary: 'One release' } })
    .input(versionInput)
    .output(releaseOutput)
    .query(({ input }) => findRelease(input.version)),

  download: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/updates/releases/{version}/download', tags, summary: 'Placeholder: downloads are not enabled (503)' }, errors: ['DOWNLOADS_DISABLED'] })
    .input(versionInput)
    .output(z.never())
    // Any version, listed or not (spec: the download route always answers 503).
    .query(() => {
      throw new AppError('DOWNLOADS_DISABLED', 'Secure downloads are not enabled in the demo. Contact support for the release package.');
    }),

  adminReleases: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/releases', tags: ['Admin'], summary: 'The release catalog' } })
    .input(z.void())
    .output(listOutput)
    .query(() => ({ items: [...RELEASES] })),

  adminLatest: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/releases/latest', tags: ['Admin'], summary: 'The latest stable release' } })
    .input(z.void())
    .output(releaseOutput)
    .query(() => latestRelease()),
});
