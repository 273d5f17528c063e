// A tiny load balancer inside the test: it checks every backend's GET /health every `intervalMs` and sends
// each request to the next backend (round robin) whose last check answered 200, as a real one would. A
// connection refused before anything was sent is tried on the next backend; anything else is the answer.
// It records every health check and every request, for the test to look at afterwards.
import { sleep, waitFor } from '../helpers/wait.js';

export interface HealthCheck {
  at: number;
  /** The HTTP status, or 0 when no answer came (refused, timed out). */
  status: number;
  /** `status` of the body (ok, degraded, draining). */
  says?: string;
}

export interface Sent {
  backend: string;
  sentAt: number;
  doneAt: number;
  /** The HTTP status; undefined when no answer came. */
  status?: number;
  body?: any;
  /** Why no answer came. */
  error?: string;
  /** Refused before anything was sent (then tried on another backend). */
  refused?: boolean;
}

interface Backend {
  name: string;
  url: string;
  up: boolean;
  checks: HealthCheck[];
}

/** The code of a failed fetch's cause (ECONNREFUSED, UND_ERR_SOCKET, ...). */
const causeCode = (err: unknown): string => (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;

export class Balancer {
  readonly sent: Sent[] = [];
  private readonly backends: Backend[];
  private next = 0;
  private running = true;
  private readonly pollers: Array<Promise<void>> = [];

  constructor(
    backends: Array<{ name: string; url: string }>,
    private readonly intervalMs = 200,
  ) {
    this.backends = backends.map((b) => ({ ...b, up: false, checks: [] }));
  }

  /** Starts the health checks and resolves once every backend has answered one with 200. */
  async start(): Promise<void> {
    for (const b of this.backends) this.pollers.push(this.poll(b));
    await waitFor(() => this.backends.every((b) => b.up), {
      timeout: 30_000,
      message: 'balancer: every backend to become healthy',
    });
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.pollers);
  }

  /** The health checks of `name` (in order). */
  checks(name: string): HealthCheck[] {
    return this.backend(name).checks;
  }

  isUp(name: string): boolean {
    return this.backend(name).up;
  }

  /**
   * Sends one request through the balancer. A refused connection is tried on the next healthy backend
   * (each try is recorded); the answer, or the error of a connection that failed otherwise, is final.
   */
  async request(method: string, path: string, opts: { body?: unknown; token?: string } = {}): Promise<Sent> {
    for (let attempt = 0; ; attempt++) {
      const backend = await this.pick();
      const headers: Record<string, string> = {};
      if (opts.body !== undefined) headers['content-type'] = 'application/json';
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      const record: Sent = { backend: backend.name, sentAt: Date.now(), doneAt: 0 };
      this.sent.push(record);
      try {
        const res = await fetch(backend.url + path, {
          method,
          headers,
          body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
          signal: AbortSignal.timeout(15_000),
        });
        const text = await res.text();
        record.status = res.status;
        record.body = text ? JSON.parse(text) : undefined;
        record.doneAt = Date.now();
        return record;
      } catch (err) {
        record.doneAt = Date.now();
        record.error = `${causeCode(err)}: ${(err as Error).message}`;
        record.refused = causeCode(err) === 'ECONNREFUSED';
        if (!record.refused || attempt >= 3) return record;
      }
    }
  }

  private backend(name: string): Backend {
    const b = this.backends.find((x) => x.name === name);
    if (!b) throw new Error(`balancer: no backend ${name}`);
    return b;
  }

  /** The next healthy backend in turn; waits while none is healthy (at most 10 s). */
  private pick(): Promise<Backend> {
    const nextUp = () => {
      for (let i = 0; i < this.backends.length; i++) {
        const b = this.backends[(this.next + i) % this.backends.length];
        if (b.up) {
          this.next = (this.next + i + 1) % this.backends.length;
          return b;
        }
      }
      return undefined;
    };
    return waitFor(nextUp, { timeout: 10_000, message: 'balancer: a healthy backend' });
  }

  private async poll(b: Backend): Promise<void> {
    while (this.running) {
      const check: HealthCheck = { at: Date.now(), status: 0 };
      try {
        const res = await fetch(`${b.url}/health`, { signal: AbortSignal.timeout(1_000) });
        check.status = res.status;
        check.says = ((await res.json()) as { status?: string }).status;
      } catch {
        /* no answer: not healthy */
      }
      b.checks.push(check);
      b.up = check.status === 200;
      // A fixed wait: the balancer's health-check interval, as a load balancer's (what the drain is timed
      // against in the tests; the instances are other processes, out of reach of fake timers).
      await sleep(this.intervalMs);
    }
  }
}
