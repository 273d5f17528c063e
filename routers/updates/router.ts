// Product updates (authenticated) and the admin view of the catalog. `/latest` is declared before
// `/{version}`: the REST matcher takes the first match.
import { z } from 'zod';
import { adminProcedure, authedProcedure, router } from '../../server/platform/trpc.js';
import { listOutput, releaseOutput, updateStatusOutput, versionInput } from './schemas.js';
import * as updates from './service.js';

const tags = ['Updates'];

export const updatesRouter = router({
  status: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/updates/status',
        description:
          'The installed version against the latest release, and whether this installation may download updates.',
        tags,
        summary: 'Installed vs latest version, license and update access',
      },
    })
    .input(z.void())
    .output(updateStatusOutput)
    .query(({ ctx }) => updates.updateStatus(ctx)),

  releases: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/updates/releases',
        description: 'Stable releases, newest first, with their notes.',
        tags,
        summary: 'Stable releases, newest first',
      },
    })
    .input(z.void())
    .output(listOutput)
    .query(() => updates.listReleases()),

  latest: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/updates/releases/latest',
        description: 'The latest stable release.',
        tags,
        summary: 'The latest stable release',
      },
    })
    .input(z.void())
    .output(releaseOutput)
    .query(() => updates.latestRelease()),

  release: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/updates/releases/{version}',
        description: 'One release by its version.',
        tags,
        summary: 'One release',
      },
    })
    .input(versionInput)
    .output(releaseOutput)
    .query(({ input }) => updates.findRelease(input)),

  download: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/updates/releases/{version}/download',
        description: 'Placeholder for release downloads, which are not enabled: always 503.',
        tags,
        summary: 'Placeholder: downloads are not enabled (503)',
      },
      errors: ['DOWNLOADS_DISABLED'],
    })
    .input(versionInput)
    .output(z.never())
    .query(() => updates.downloadRelease()),

  adminReleases: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/releases',
        description: 'The whole release catalog, pre-releases included.',
        tags: ['Admin'],
        summary: 'The release catalog',
      },
    })
    .input(z.void())
    .output(listOutput)
    .query(() => updates.listReleases()),

  adminLatest: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/releases/latest',
        description: 'The latest stable release of the catalog.',
        tags: ['Admin'],
        summary: 'The latest stable release',
      },
    })
    .input(z.void())
    .output(releaseOutput)
    .query(() => updates.latestRelease()),
});
