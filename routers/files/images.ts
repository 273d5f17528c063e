// Where uploaded images are worked: in the image process (image-worker.ts), a child of this one started by
// the first image and kept, at the lowest scheduling priority; a few at a time (IMAGE_WORK_CONCURRENCY),
// with a queue (IMAGE_WORK_QUEUE) past which an upload is answered 503 with Retry-After.
//
// Why not here: image work ran on this process's libuv threads (four), which bcrypt shares, so four large
// images held every thread and a sign-in took 5 to 7 s instead of 10 ms; and even on a free thread, a CPU
// busy with images halved bcrypt's speed. In its own process, at the lowest priority, it gets only the CPU
// that sign-in and requests leave. The process stays up between uploads (starting it costs about half a
// second) and ends with this one.
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { WorkLimit } from '../../server/platform/work-limit.js';
import type { ImageJob, ImageOutcome } from './image-jobs.js';

/** The image process: one child, started by the first job, restarted by the next job after an exit. */
class ImageProcess {
  private child: ChildProcess | undefined;
  private readonly pending = new Map<number, { resolve: (o: ImageOutcome) => void; reject: (e: Error) => void }>();
  private nextId = 1;

  run(job: ImageJob): Promise<ImageOutcome> {
    const child = this.child ?? this.start();
    const id = this.nextId++;
    // While a job is out, its answer keeps this process alive; idle, the image process does not.
    if (this.pending.size === 0) child.channel?.ref();
    return new Promise<ImageOutcome>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      child.send({ id, job }, (err) => {
        if (!err) return;
        this.pending.delete(id);
        reject(err);
      });
    }).finally(() => {
      if (this.pending.size === 0 && this.child === child) child.channel?.unref();
    });
  }

  async close() {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill();
    await exited;
  }

  private start(): ChildProcess {
    // From the sources (tsx, the tests) the entry is TypeScript; from dist/ it is compiled JavaScript.
    const fromSources = import.meta.url.endsWith('.ts');
    const entry = new URL(`./image-worker.${fromSources ? 'ts' : 'js'}`, import.meta.url);
    const child = fork(fileURLToPath(entry), [], {
      serialization: 'advanced',
      execArgv: fromSources ? ['--import', 'tsx'] : [],
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      // Nothing of this process's settings (secrets among them): the image process needs none.
      env: { PATH: process.env.PATH ?? '', NODE_ENV: process.env.NODE_ENV ?? 'production' },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    child.on('message', (message: { id?: number; outcome?: ImageOutcome }) => {
      if (message.id === undefined || !message.outcome) return;
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      waiter?.resolve(message.outcome);
    });
    const fail = (why: string) => {
      if (this.child === child) this.child = undefined;
      for (const waiter of this.pending.values()) waiter.reject(new Error(`the image process ${why}`));
      this.pending.clear();
    };
    child.on('exit', (code, signal) => fail(`exited (${signal ?? code})`));
    child.on('error', (err) => fail(`failed: ${err.message}`));
    // The image process does not keep this one alive (its channel does while a job is out: run()).
    child.unref();
    child.channel?.unref();
    this.child = child;
    return child;
  }
}

export interface ImageWorkOptions {
  concurrency: number;
  queue: number;
}

/** Uploaded images, worked in the image process, a few at a time (503 SERVICE_UNAVAILABLE past the queue). */
export class ImageWork {
  private readonly limit: WorkLimit;
  private readonly process = new ImageProcess();

  constructor(opts: ImageWorkOptions) {
    this.limit = new WorkLimit({
      concurrency: opts.concurrency,
      queue: opts.queue,
      retryAfterSeconds: 5,
      busyMessage: 'Too many images are being processed right now. Try again in a few seconds.',
    });
  }

  /** The job's outcome; rejects when the image process fails (it is started again by the next job). */
  run(job: ImageJob): Promise<ImageOutcome> {
    return this.limit.run(() => this.process.run(job));
  }

  /** Ends the image process, if it runs. */
  close(): Promise<void> {
    return this.process.close();
  }
}
