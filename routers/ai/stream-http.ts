// The REST generate routes as event streams: `POST /ai/generate` and `POST /workspaces/{workspaceId}/ai/generate`
// with `Accept: text/event-stream` answer 200 text/event-stream (`event: started`, `event: delta`...,
// `event: completed`, or `event: error` once the stream began), with a `: keep-alive` comment every
// AI_STREAM_KEEPALIVE_MS (15 s). The call goes through the same procedure builder as /trpc's
// ai.generateStream (authentication, the workspace and its permission, input validation), so whatever is
// refused before the first event is the usual JSON error. The client going away aborts the provider call.
import type { Request, RequestHandler, Response } from 'express';
import type { AppDeps } from '../../server/platform/context.js';
import { contextFactory } from '../../server/platform/context.js';
import { AppError, toApiError } from '../../server/platform/errors.js';
import { noteRequest } from '../../server/platform/monitoring.js';
import { aiRouter } from './router.js';
import type { generateInput } from './schemas.js';
import type { z } from 'zod';
import type { GenerationStreamEvent } from './stream.js';

/** The generate routes, and the workspace id in the path of the second. */
const GENERATE_PATH = /^\/(?:workspaces\/([^/]+)\/)?ai\/generate\/?$/;

/** Whether the request asks for an event stream (and not JSON first). */
export function wantsEventStream(req: Pick<Request, 'headers'>): boolean {
  const accept = req.headers.accept;
  return typeof accept === 'string' && /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept);
}

/** Whether the request is a streamed generation (a POST to a generate route asking for text/event-stream). */
export function isGenerationStream(req: Pick<Request, 'headers' | 'method' | 'path'>): boolean {
  return req.method === 'POST' && GENERATE_PATH.test(req.path) && wantsEventStream(req);
}

/** Headers of the stream: no cache, and no proxy buffering (nginx reads X-Accel-Buffering). */
const STREAM_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache',
  'X-Accel-Buffering': 'no',
};

/** A path segment decoded; as it came when it is not valid percent-encoding (then not a valid id either). */
function decodedOrRaw(segment: string) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** The Express handler of streamed generations; every other request goes on to `next`. */
type GenerateStreamInput = z.input<typeof generateInput>;

export function generationStreams(deps: AppDeps): RequestHandler {
  const makeContext = contextFactory(deps);
  return (req, res, next) => {
    if (!isGenerationStream(req)) return next();
    // A body that is not JSON: the REST handler's 415, as without the Accept header.
    const type = req.headers['content-type'];
    if (type !== undefined && !/^application\/(?:[\w.+-]*\+)?json\b/i.test(type)) return next();
    if (req.get('idempotency-key') !== undefined) {
      return next(
        new AppError(
          'BAD_REQUEST',
          'An Idempotency-Key cannot be used with Accept: text/event-stream: a stream cannot be replayed. Send the key without streaming, or stream without the key.',
        ),
      );
    }
    deps.inFlight.run(() => serve(deps, req, res, makeContext)).catch(next);
  };
}

async function serve(deps: AppDeps, req: Request, res: Response, makeContext: ReturnType<typeof contextFactory>) {
  const abort = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) abort.abort(new Error('the client went away'));
  };
  res.once('close', onClose);
  const body: unknown = req.body ?? {};
  const pathWorkspace = GENERATE_PATH.exec(req.path)?.[1];
  const input = (
    pathWorkspace !== undefined && body && typeof body === 'object' && !Array.isArray(body)
      ? { ...body, workspaceId: decodedOrRaw(pathWorkspace) }
      : body
  ) as GenerateStreamInput;

  // Until the first event, a refusal is a JSON error (thrown to the error handler).
  const caller = aiRouter.createCaller(makeContext({ req, res }), { signal: abort.signal });
  const events = (await caller.generateStream(input))[Symbol.asyncIterator]() as AsyncIterator<GenerationStreamEvent>;
  const first = await events.next();
  if (first.done) throw new Error('the generation stream ended before it started');

  res.status(200).set(STREAM_HEADERS);
  res.flushHeaders();
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), deps.config.AI_STREAM_KEEPALIVE_MS);
  try {
    let next: IteratorResult<GenerationStreamEvent> = first;
    while (!next.done && !abort.signal.aborted) {
      const event = next.value;
      if (event.type === 'started') res.write(sse('started', { id: event.id }));
      else if (event.type === 'delta') res.write(sse('delta', { text: event.text }));
      else res.write(sse('completed', event.generation));
      next = await events.next();
    }
  } catch (err) {
    const api = toApiError(err);
    noteRequest(req, { error: api, errorName: err instanceof Error ? err.name : 'Error' });
    if (api.status >= 500) deps.logger.error({ err, requestId: req.id }, 'generation stream failed');
    if (!abort.signal.aborted) res.write(sse('error', { code: api.code, message: api.message }));
  } finally {
    clearInterval(keepAlive);
    res.off('close', onClose);
    // Stopped while the generator waited at an event: it closes the generation (CANCELED).
    if (abort.signal.aborted) await events.return?.();
    res.end();
  }
}
