// The image process: a child of the API process (image-process.ts) that decodes and re-encodes uploaded
// images at the lowest scheduling priority, so that image work takes only the CPU that sign-in (bcrypt) and
// requests leave, and never libuv's threads of the API process. Jobs come over IPC, answers go back.
import fs from 'node:fs';
import os from 'node:os';
import type { ImageJob, ImageOutcome } from './image-jobs.js';

/**
 * The lowest priority for every thread of this process. On Linux a priority is a thread's, and threads
 * inherit it from the thread that starts them; Node's own threads, and libuv's once a module loader has
 * read files, exist before this code runs, so each is set (a thread started later inherits it). Elsewhere
 * it is the process's. Not allowed: the work runs at the ordinary priority, still in its own process.
 */
function lowestPriority() {
  const low = os.constants.priority.PRIORITY_BELOW_NORMAL;
  try {
    os.setPriority(low);
    for (const tid of fs.existsSync('/proc/self/task') ? fs.readdirSync('/proc/self/task') : [])
      os.setPriority(Number(tid), low);
  } catch {
    // As said above.
  }
}

lowestPriority();
const sharp = (await import('sharp')).default;
// One libvips thread per image: IMAGE_WORK_CONCURRENCY images at a time use that many threads.
sharp.concurrency(1);
const { runImageJob } = await import('./image-jobs.js');
// Any thread that loading sharp started.
lowestPriority();

process.on('message', (message: { id: number; job: ImageJob }) => {
  void runImageJob(sharp, message.job)
    .catch((): ImageOutcome => ({ refused: 'unreadable' }))
    .then((outcome) => process.send?.({ id: message.id, outcome }));
});
// The API process has gone: nothing is left to do.
process.on('disconnect', () => process.exit(0));
process.send?.({ ready: true });
