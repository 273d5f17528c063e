// A bound on heavy work of one kind in this process (image decoding and encoding): at most `concurrency`
// jobs run at a time, at most `queue` more wait their turn, and past that a request is answered 503 with
// Retry-After at once. Such work runs on libuv's thread pool (four threads by default), which bcrypt shares:
// unbounded, four large images held every thread and sign-ins waited seconds behind them.
import { AppError } from './errors.js';

export interface WorkLimitOptions {
  /** Jobs that run at once. */
  concurrency: number;
  /** Jobs that may wait for a turn; more are refused. */
  queue: number;
  /** Sent as Retry-After with the 503. */
  retryAfterSeconds: number;
  /** The 503's message. */
  busyMessage: string;
}

export class WorkLimit {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly opts: WorkLimitOptions) {}

  /** Jobs running and waiting now. */
  get load() {
    return { running: this.running, waiting: this.waiting.length };
  }

  /** Runs `work` when a turn is free (at once, or after the jobs ahead of it); 503 when the queue is full. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running < this.opts.concurrency) this.running += 1;
    else if (this.waiting.length < this.opts.queue) await new Promise<void>((turn) => this.waiting.push(turn));
    else {
      const busy = new AppError('SERVICE_UNAVAILABLE', this.opts.busyMessage);
      busy.retryAfterSeconds = this.opts.retryAfterSeconds;
      throw busy;
    }
    try {
      return await work();
    } finally {
      // The turn passes to the next job waiting, or is given back.
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}
