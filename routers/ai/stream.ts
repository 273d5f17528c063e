// Streaming generation (docs/api.md, "Streaming generation"): the same checks and limits as generate(),
// then the provider's answer as it is written. Everything that can refuse the request (the demo rule, the
// provider's key, the template, the limits) happens before the first event, so the HTTP layers can still
// answer a plain JSON error. The monthly count is reserved before the stream starts; the generation is
// stored RUNNING (with a heartbeat) when it starts and closed once at the end: SUCCEEDED; FAILED when the
// provider fails (uncounted, as failures are); CANCELED when the client goes away (its partial output and
// the tokens so far, counted). The sweep (closeAbandonedStreams) closes those an API process left RUNNING.
import crypto from 'node:crypto';
import type { Actor } from '../../server/platform/actor.js';
import type { AppDeps } from '../../server/platform/context.js';
import { AppError } from '../../server/platform/errors.js';
import type { WorkspaceAccess } from '../workspaces/access.js';
import { estimateTokens } from './providers/mock.js';
import {
  closeAbandoned,
  closeStreamed,
  insertRunning,
  release,
  reserve,
  type NewGeneration,
  type StreamedEnd,
} from './reservations.js';
import type { GenerateInput } from './schemas.js';
import { limitReached, prepareGeneration, reserveTestAccount } from './service.js';

/** How often a running stream renews its generation's heartbeat. */
export const HEARTBEAT_MS = 30_000;
/** A RUNNING generation whose heartbeat is older than this was left by a process that stopped. */
export const ABANDONED_AFTER_MS = 3 * HEARTBEAT_MS;

type GenerationAnswer = Awaited<ReturnType<Awaited<ReturnType<typeof prepareGeneration>>['answer']>>;

/** What a streamed generation sends: its id first, the text in pieces, then the stored generation. */
export type GenerationStreamEvent =
  | { type: 'started'; id: string }
  | { type: 'delta'; text: string }
  | { type: 'completed'; generation: GenerationAnswer };

/**
 * Generates text as a stream of events (see above). `signal` aborts when the client goes away: the
 * provider's request is aborted with it. Stopping the iteration early (return()) cancels the same way.
 */
export async function* generateStream(
  deps: Pick<AppDeps, 'db' | 'config' | 'logger' | 'ai'>,
  actor: Actor,
  input: GenerateInput & { workspace: WorkspaceAccess },
  signal: AbortSignal,
): AsyncGenerator<GenerationStreamEvent, void, undefined> {
  const { db } = deps;
  const { workspace } = input;
  const { user, request, base, limit, period, overage, answer, testAccount } = await prepareGeneration(
    deps,
    actor,
    input,
  );

  // The reservations, before anything is sent.
  if (testAccount) await reserveTestAccount(deps, user.id, period);
  const releaseAll = async () => {
    await release(db, 'ai_usage_counters', workspace.id, period);
    if (testAccount) await release(db, 'ai_user_usage_counters', user.id, period);
  };
  const granted = await reserve(db, 'ai_usage_counters', workspace.id, period, limit.limit).catch(async (err) => {
    if (testAccount) await release(db, 'ai_user_usage_counters', user.id, period);
    throw err;
  });
  if (!granted) {
    if (testAccount) await release(db, 'ai_user_usage_counters', user.id, period);
    throw limitReached(limit);
  }
  const id = crypto.randomUUID();
  try {
    await insertRunning(db, { ...base, id });
  } catch (err) {
    await releaseAll();
    throw err;
  }

  const started = performance.now();
  let output = '';
  let promptTokens: number | undefined;
  let completionTokens: number | undefined;
  const end = (status: StreamedEnd['status'], errorCode?: string): StreamedEnd => ({
    status,
    output,
    prompt_tokens: promptTokens ?? estimateTokens((request.systemPrompt ?? '') + request.prompt),
    completion_tokens: completionTokens ?? (output ? estimateTokens(output) : 0),
    duration_ms: Math.round(performance.now() - started),
    error_code: errorCode,
  });
  let closed = false;
  const heartbeat = setInterval(() => {
    if (signal.aborted && !closed) {
      // Aborted while nobody reads the stream any more (the consumer never resumed it): close it here.
      closed = true;
      clearInterval(heartbeat);
      void closeStreamed(db, id, end('CANCELED')).catch((err: unknown) =>
        deps.logger.warn({ err, generationId: id }, 'closing an abandoned generation failed'),
      );
      return;
    }
    db.updateTable('ai_generations')
      .set({ heartbeat_at: new Date() })
      .where('id', '=', id)
      .where('status', '=', 'RUNNING')
      .execute()
      .catch((err: unknown) => deps.logger.warn({ err, generationId: id }, 'generation heartbeat failed'));
  }, HEARTBEAT_MS);
  heartbeat.unref();

  try {
    yield { type: 'started', id };
    try {
      for await (const chunk of deps.ai.stream(request, signal)) {
        if (chunk.type === 'delta') {
          output += chunk.text;
          yield { type: 'delta', text: chunk.text };
        } else {
          promptTokens = chunk.promptTokens ?? promptTokens;
          completionTokens = chunk.completionTokens ?? completionTokens;
        }
      }
    } catch (err) {
      if (signal.aborted) return; // the client went away: CANCELED below
      closed = true;
      const code = err instanceof AppError ? err.code : 'INTERNAL_SERVER_ERROR';
      deps.logger.warn(
        { provider: deps.ai.name, model: request.model, generationId: id, cause: (err as { detail?: unknown }).detail },
        'AI provider failed mid-stream',
      );
      await closeStreamed(db, id, end('FAILED', code));
      await releaseAll();
      throw err;
    }
    closed = true;
    const finished = end('SUCCEEDED');
    const stored = await closeStreamed(db, id, { ...finished, meter_period: overage(granted.used) });
    if (!stored) throw new AppError('INTERNAL_SERVER_ERROR', 'The generation could not be stored.');
    const generation: NewGeneration = {
      ...base,
      id,
      ...finished,
    };
    yield { type: 'completed', generation: answer(generation, stored, granted.used) };
  } finally {
    clearInterval(heartbeat);
    // The client went away (the signal, or the iteration stopped early): the partial answer, counted.
    if (!closed) await closeStreamed(db, id, end('CANCELED'));
  }
}

/** The periodic sweep: closes the streamed generations of API processes that stopped mid-stream. */
export async function closeAbandonedStreams({ db, logger }: Pick<AppDeps, 'db' | 'logger'>, now = new Date()) {
  const closed = await closeAbandoned(db, new Date(now.getTime() - ABANDONED_AFTER_MS));
  if (closed) logger.warn({ closed }, 'closed streamed generations left running');
  return closed;
}

/**
 * The events of a stream whose first has been taken already (`first`), from the start: `first`, then the
 * stream's own next(). Not a generator around it: that would add a promise hop to every event, and its
 * return() before the first read would leave the stream suspended instead of closing it.
 */
export function startedStream<T>(
  events: AsyncGenerator<T, void, undefined>,
  first: IteratorResult<T, void>,
): AsyncIterableIterator<T, void> {
  let held: IteratorResult<T, void> | undefined = first;
  const stream: AsyncIterableIterator<T, void> = {
    next() {
      const taken = held;
      held = undefined;
      return taken ? Promise.resolve(taken) : events.next();
    },
    return(value?: void | PromiseLike<void>) {
      held = undefined;
      return events.return(value);
    },
    throw(err: unknown) {
      held = undefined;
      return events.throw(err);
    },
    [Symbol.asyncIterator]() {
      return stream;
    },
  };
  return stream;
}
