// Product updates: the releases of the catalog (catalog.ts), and the update page's status: installed vs
// latest, and what the license says (never the key). Downloads are not enabled.
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import { RELEASES, compareVersions, latestRelease, type Release } from './catalog.js';

const VERSION_LIKE = /^[A-Za-z0-9.+-]{1,20}$/;

export const listReleases = () => ({ items: [...RELEASES] });

export { latestRelease };

export function findRelease({ version }: { version: string }): Release {
  const release = RELEASES.find((r) => r.version === version);
  if (!release) {
    // Only something shaped like a version is repeated back: anything else the caller put in the path
    // (a pasted token, say) stays out of answers, logs and monitoring records.
    const named = VERSION_LIKE.test(version) ? `release ${version}` : 'such release';
    throw new AppError('NOT_FOUND', `There is no ${named} in the catalog. GET /updates/releases lists the releases.`);
  }
  return release;
}

/** Any version, listed or not: the download route always answers 503. */
export function downloadRelease(): never {
  throw new AppError(
    'DOWNLOADS_DISABLED',
    'Secure downloads are not enabled in the demo. Contact support for the release package.',
  );
}

/** The update page's status: installed vs latest, and what the license says (never the key). */
export function updateStatus({ config }: Pick<AppDeps, 'config'>) {
  const latest = latestRelease();
  const licensed = Boolean(config.LICENSE_KEY);
  const updateAvailable = config.UPDATE_CHECK_ENABLED && compareVersions(latest.version, config.SERVICE_VERSION) > 0;
  const licenseStatus: 'ACTIVE' | 'REQUIRED' | 'NOT_REQUIRED' = licensed
    ? 'ACTIVE'
    : config.LICENSE_ENFORCEMENT_ENABLED
      ? 'REQUIRED'
      : 'NOT_REQUIRED';
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
