// Periodic maintenance (purges, expiries, re-checks): one list of tasks, built by the composition root
// (server/tasks.ts). The worker runs them as repeatable jobs of its maintenance queue when the queues are
// on; otherwise the API process runs them on timers (PeriodicTimers), so `npm start` alone shows them.
// Every task is safe to run on several instances at once.
import type { Logger } from './logger.js';

export interface PeriodicTask {
  /** The job's name in the maintenance queue, and in the logs. */
  name: string;
  everyMs: number;
  run: () => Promise<unknown>;
}

/** The tasks on timers of this process: one run of a task at a time, a failure logged and tried next time. */
export class PeriodicTimers {
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(
    private readonly tasks: PeriodicTask[],
    private readonly logger: Logger,
  ) {}

  start(): void {
    for (const task of this.tasks) {
      const timer = setInterval(() => void this.runNow(task.name), task.everyMs);
      timer.unref();
      this.timers.push(timer);
    }
  }

  /** Runs a task now (or joins the run in progress); resolves when it ends, whether it failed or not. */
  runNow(name: string): Promise<unknown> {
    const task = this.tasks.find((t) => t.name === name);
    if (!task) return Promise.reject(new Error(`no periodic task named ${name}`));
    const current = this.running.get(name);
    if (current) return current;
    const run = task
      .run()
      .catch((err: unknown) => this.logger.error({ err, task: name }, 'periodic task failed'))
      .finally(() => this.running.delete(name));
    this.running.set(name, run);
    return run;
  }

  /** Clears the timers and waits for the runs in progress. */
  async stop(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    this.timers.length = 0;
    await Promise.allSettled([...this.running.values()]);
  }
}
