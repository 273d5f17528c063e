// tRPC's HTTP protocol for its non-streaming links (httpLink, httpBatchLink), answered from the Node request
// as it is. It does what @trpc/server's resolveResponse does, in the same order and with the same messages:
// the calls are read from the path and the query or body, the procedures are called as it calls them, errors
// go to onError and are shaped by getErrorShape (the router's errorFormatter), the status is its
// getHTTPStatusCode's and then the responseMeta's. What is left out is the Fetch Request built around each
// request (URL, Headers, a body stream, an AbortSignal.any per call) and the Fetch Response (a body stream
// piped into the Node response): on the /trpc mount they were half the CPU of a small query. Requests of any
// other kind (streamed batches, subscriptions, form data, binary bodies, methods other than GET and POST) are
// not taken: isPlainTrpcCall() says no, or the handler passes a subscription on, and @trpc/server's own
// adapter answers them.
import type { Request, Response } from 'express';
import {
  TRPCError,
  getTRPCErrorFromUnknown,
  getTRPCErrorShape,
  type AnyTRPCProcedure,
  type AnyTRPCRouter,
} from '@trpc/server';
import {
  getHTTPStatusCode,
  parseConnectionParamsFromString,
  type ResponseMeta,
  type TRPCRequestInfo,
} from '@trpc/server/http';

type ProcedureType = AnyTRPCProcedure['_def']['type'];
type Call = TRPCRequestInfo['calls'][number];

/** A procedure as tRPC calls it (with its ProcedureCallOptions). */
type Callable = (opts: {
  path: string;
  getRawInput: () => Promise<unknown>;
  ctx: unknown;
  type: ProcedureType;
  signal: AbortSignal | undefined;
  batchIndex: number;
}) => Promise<unknown>;

/** What one call came to. */
type Outcome = { ok: true; data: unknown } | { ok: false; error: TRPCError };

/** The answer of one call in tRPC's envelope. */
type Envelope = { result: { data: unknown } } | { error: unknown };

export interface TrpcHttpOptions<TContext> {
  router: AnyTRPCRouter;
  /** The most calls one batch may carry (tRPC's `maxBatchSize`). */
  maxBatchSize: number;
  createContext(req: Request, res: Response, info: TRPCRequestInfo): TContext | Promise<TContext>;
  /** As tRPC's `onError`: each error, before its shape is made. */
  onError(opts: {
    error: TRPCError;
    req: Request;
    path: string | undefined;
    input: unknown;
    ctx: TContext | undefined;
    type: ProcedureType | 'unknown';
  }): void;
  /** As tRPC's `responseMeta`. */
  responseMeta(opts: {
    ctx: TContext | undefined;
    info: TRPCRequestInfo | undefined;
    paths: string[] | undefined;
    type: ProcedureType | 'unknown';
    data: Envelope[];
    errors: TRPCError[];
    eagerGeneration: boolean;
  }): ResponseMeta;
}

/** The methods tRPC accepts for each kind of procedure (without `allowMethodOverride`). */
const ACCEPTED_METHODS: Record<ProcedureType, readonly string[]> = {
  query: ['GET'],
  mutation: ['POST'],
  subscription: ['GET'],
};

/** The media type of a Content-Type header, as tRPC compares it (lower case, parameters dropped). */
function mediaType(header: string | undefined): string | undefined {
  return header?.toLowerCase().split(';', 1)[0]?.trim();
}

/** tRPC's `info.accept`: the `trpc-accept` header, else `application/jsonl` when `Accept` lists it. */
function acceptOf(req: Request): TRPCRequestInfo['accept'] {
  const trpcAccept = req.headers['trpc-accept'];
  if (typeof trpcAccept === 'string') return trpcAccept as TRPCRequestInfo['accept'];
  return req.headers.accept?.split(',').some((t) => t.trim() === 'application/jsonl') ? 'application/jsonl' : null;
}

/**
 * Whether the request is one trpcHttpHandler answers: a GET or POST that is not a streamed batch
 * (`trpc-accept: application/jsonl`) and has no form-data or binary body. Subscriptions show only once their
 * procedure is found: the handler passes them on then.
 */
export function isPlainTrpcCall(req: Request): boolean {
  if (req.method !== 'GET' && req.method !== 'POST') return false;
  const type = mediaType(req.headers['content-type']);
  if (type === 'multipart/form-data' || type === 'application/octet-stream') return false;
  return acceptOf(req) !== 'application/jsonl';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && !Array.isArray(value) && typeof value === 'object';
}

function isAsyncIterable(value: unknown): boolean {
  return isObject(value) && Symbol.asyncIterator in value;
}

function isPromise(value: unknown): boolean {
  if (!isObject(value) && typeof value !== 'function') return false;
  const { then, catch: onCatch } = value as { then?: unknown; catch?: unknown };
  return typeof then === 'function' && typeof onCatch === 'function';
}

/** A result only a streaming link can carry (tRPC's isDataStream): an async iterable, or promises in it. */
function isDataStream(value: unknown): boolean {
  if (!isObject(value)) return false;
  if (isAsyncIterable(value)) return true;
  return Object.values(value).some((v) => isPromise(v) || isAsyncIterable(v));
}

function streamLikeResult(): TRPCError {
  const message = 'Cannot use stream-like response in non-streaming request - use httpBatchStreamLink';
  return new TRPCError({ code: 'UNSUPPORTED_MEDIA_TYPE', message });
}

/** The procedures at `paths`, as tRPC's getProcedureAtPath finds them (loading lazy routers on the way). */
async function proceduresAt(router: AnyTRPCRouter, paths: string[]): Promise<Array<AnyTRPCProcedure | null>> {
  const def = router._def as { procedures: Record<string, unknown>; lazy: Record<string, { load(): Promise<void> }> };
  const found = paths.map((path) => (def.procedures[path] as AnyTRPCProcedure | undefined) ?? null);
  for (const [index, path] of paths.entries()) {
    while (!found[index]) {
      const key = Object.keys(def.lazy).find((k) => path === k || path.startsWith(`${k}.`));
      if (!key) break;
      await def.lazy[key].load();
      found[index] = (def.procedures[path] as AnyTRPCProcedure | undefined) ?? null;
    }
  }
  return found;
}

/**
 * The inputs of a request's calls (a JSON text: the `input` query parameter, or the body of a POST), parsed
 * once, when a procedure first asks for its own. As tRPC's memo(): every call that asks after a failure gets
 * the same error.
 */
class CallInputs {
  private parsing: Promise<Record<number, unknown>> | undefined;
  private parsed: Record<number, unknown> | undefined;

  constructor(
    private readonly text: string | null,
    private readonly isBatchCall: boolean,
    private readonly calls: number,
    private readonly deserialize: (value: unknown) => unknown,
  ) {}

  /** The input of call `index`, as its procedure reads it (getRawInput). */
  async read(index: number): Promise<unknown> {
    return (await (this.parsing ??= this.parse()))[index];
  }

  /** The input of call `index` if it was read already (for onError and the error shape). */
  result(index: number): unknown {
    return this.parsed?.[index];
  }

  private async parse(): Promise<Record<number, unknown>> {
    try {
      const raw: unknown = this.text ? JSON.parse(this.text) : undefined;
      const inputs = Object.create(null) as Record<number, unknown>;
      if (raw !== undefined && !this.isBatchCall) inputs[0] = this.deserialize(raw);
      else if (raw !== undefined) {
        const message = '"input" needs to be an object when doing a batch call';
        if (!isObject(raw)) throw new TRPCError({ code: 'BAD_REQUEST', message });
        for (let i = 0; i < this.calls; i++) if (raw[i] !== undefined) inputs[i] = this.deserialize(raw[i]);
      }
      return (this.parsed = inputs);
    } catch (cause) {
      if (cause instanceof TRPCError) throw cause;
      const message = cause instanceof Error ? cause.message : 'Invalid input';
      throw new TRPCError({ code: 'BAD_REQUEST', message, cause });
    }
  }
}

/** The parameters of a target without a query: only ever read. */
const NO_PARAMS = new URLSearchParams();

/** The query of a request target, as WHATWG URL reads it (tRPC reads `url.searchParams`): up to a `#`. */
function searchParamsOf(url: string): URLSearchParams {
  const hash = url.indexOf('#');
  const target = hash === -1 ? url : url.slice(0, hash);
  const start = target.indexOf('?');
  return start === -1 ? NO_PARAMS : new URLSearchParams(target.slice(start + 1));
}

/** The body of a POST as text: the JSON parser keeps it as it came (server/platform/http.ts), else there is none. */
function bodyText(req: Request): string {
  const body: unknown = req.body;
  if (body === undefined || body === null) return '';
  return typeof body === 'string' ? body : JSON.stringify(body);
}

/** What createContext and responseMeta are told of a request (tRPC's `info`). */
class RequestInfo implements TRPCRequestInfo {
  constructor(
    readonly isBatchCall: boolean,
    readonly accept: TRPCRequestInfo['accept'],
    readonly calls: Call[],
    readonly type: ProcedureType | 'unknown',
    readonly connectionParams: TRPCRequestInfo['connectionParams'],
    readonly signal: AbortSignal,
    private readonly target: string,
  ) {}

  /** Read by nothing of this app: made only if asked for. */
  get url(): URL {
    return new URL(this.target, 'http://localhost');
  }
}

/**
 * The handler of the /trpc mount for the requests isPlainTrpcCall() picks. `passOn` is called instead when
 * the request turns out to be a subscription, before anything of it was read or written.
 */
export function trpcHttpHandler<TContext>(opts: TrpcHttpOptions<TContext>) {
  const { router, maxBatchSize } = opts;
  const config = router._def._config;
  const separator: string = (config as { pathSeparator?: string }).pathSeparator ?? '.';
  const deserialize = (value: unknown): unknown => config.transformer.input.deserialize(value);
  const serialize = (value: unknown): unknown => config.transformer.output.serialize(value);

  /** The calls of a request (tRPC's getRequestInfo); a TRPCError thrown here fails the whole request. */
  async function requestInfo(req: Request, signal: AbortSignal): Promise<TRPCRequestInfo> {
    const params = searchParamsOf(req.url);
    const urlPath = req.path;
    let path = urlPath.slice(urlPath.lastIndexOf('/') + 1);
    if (path.includes('%')) {
      try {
        path = decodeURIComponent(path);
      } catch (cause) {
        throw new TRPCError({ code: 'BAD_REQUEST', message: `Invalid URL-encoding in path "${path}"`, cause });
      }
    }
    if (separator !== '.') path = path.split(separator).join('.');
    if (req.method === 'POST' && mediaType(req.headers['content-type']) !== 'application/json') {
      const type = req.headers['content-type'];
      const message = type !== undefined ? `Unsupported content-type "${type}` : 'Missing content-type header';
      throw new TRPCError({ code: 'UNSUPPORTED_MEDIA_TYPE', message });
    }
    const isBatchCall = params.get('batch') === '1';
    const paths = isBatchCall ? path.split(',') : [path];
    if (isBatchCall && paths.length > maxBatchSize) {
      throw new TRPCError({ code: 'BAD_REQUEST', message: 'Batch call exceeds maximum size' });
    }
    const text = req.method === 'GET' ? params.get('input') : bodyText(req);
    const inputs = new CallInputs(text, isBatchCall, paths.length, deserialize);
    const procedures = await proceduresAt(router, paths);
    const calls: Call[] = paths.map((callPath, index) => ({
      batchIndex: index,
      path: callPath,
      procedure: procedures[index]!,
      getRawInput: inputs.read.bind(inputs, index),
      result: inputs.result.bind(inputs, index),
    }));
    let type: ProcedureType | 'unknown' = 'unknown';
    for (const procedure of procedures) {
      if (!procedure || procedure._def.type === type) continue;
      if (type === 'unknown') type = procedure._def.type;
      else {
        const types = new Set(procedures.flatMap((p) => (p ? [p._def.type] : [])));
        const message = `Cannot mix procedure types in call: ${Array.from(types).join(', ')}`;
        throw new TRPCError({ code: 'BAD_REQUEST', message });
      }
    }
    const connection = params.get('connectionParams');
    const connectionParams = connection === null ? null : parseConnectionParamsFromString(connection);
    return new RequestInfo(isBatchCall, acceptOf(req), calls, type, connectionParams, signal, req.url);
  }

  /** One call: its data, or its error (given to onError at once, as tRPC does). */
  async function call(
    req: Request,
    res: Response,
    c: Call,
    ctx: TContext | undefined,
    ctxError: TRPCError | undefined,
    signal: AbortSignal,
  ): Promise<Outcome> {
    const proc = c.procedure;
    try {
      if (!proc) throw new TRPCError({ code: 'NOT_FOUND', message: `No procedure found on path "${c.path}"` });
      const type = proc._def.type;
      if (!ACCEPTED_METHODS[type].includes(req.method)) {
        res.setHeader('allow', ACCEPTED_METHODS[type].join(', '));
        const message = `Unsupported ${req.method}-request to ${type} procedure at path "${c.path}"`;
        throw new TRPCError({ code: 'METHOD_NOT_SUPPORTED', message });
      }
      if (ctxError) throw ctxError;
      // Called as resolveResponse calls it (callTRPCProcedure would first look it up again).
      const { path, getRawInput, batchIndex } = c;
      return { ok: true, data: await (proc as Callable)({ path, getRawInput, ctx, type, signal, batchIndex }) };
    } catch (cause) {
      const error = getTRPCErrorFromUnknown(cause);
      opts.onError({ error, req, path: c.path, input: c.result(), ctx, type: proc?._def.type ?? 'unknown' });
      return { ok: false, error };
    }
  }

  function errorShape(error: TRPCError, ctx: TContext | undefined, type: ProcedureType | 'unknown', c?: Call) {
    return getTRPCErrorShape({ config, error, type, path: c?.path, input: c?.result(), ctx }) as unknown;
  }

  /** An envelope through the router's transformer (tRPC's transformTRPCResponse). */
  function transform(e: Envelope): Envelope {
    return 'error' in e ? { error: serialize(e.error) } : { result: { data: serialize(e.result.data) } };
  }

  /**
   * Writes the answer: tRPC's status for its envelopes, then the responseMeta's status and headers, and the
   * envelopes through the router's transformer. The body is serialised first: if that throws, nothing of
   * this answer was written. `errors` is by call, with undefined for a call that succeeded.
   */
  function answer(
    res: Response,
    envelope: Envelope | Envelope[],
    errors: Array<TRPCError | undefined>,
    ctx: TContext | undefined,
    info: TRPCRequestInfo | undefined,
  ) {
    const body = JSON.stringify(Array.isArray(envelope) ? envelope.map(transform) : transform(envelope));
    const failed = errors.filter((e): e is TRPCError => e !== undefined);
    type StatusOf = Parameters<typeof getHTTPStatusCode>;
    let status = failed.length ? getHTTPStatusCode(envelope as StatusOf[0], errors) : 200;
    const meta = opts.responseMeta({
      ctx,
      info,
      paths: info?.calls.map((c) => c.path),
      data: Array.isArray(envelope) ? envelope : [envelope],
      errors: failed,
      eagerGeneration: false,
      type: info?.calls.find((c) => c.procedure)?.procedure?._def.type ?? 'unknown',
    });
    if (meta.headers instanceof Headers) for (const [key, value] of meta.headers) res.appendHeader(key, value);
    else if (meta.headers) {
      for (const [key, value] of Object.entries(meta.headers)) {
        if (Array.isArray(value)) for (const v of value) res.appendHeader(key, v);
        else if (typeof value === 'string') res.setHeader(key, value);
      }
    }
    if (meta.status) status = meta.status;
    // As tRPC's writeResponse: a status set before (none is) is kept.
    if (res.statusCode === 200) res.statusCode = status;
    res.end(body);
  }

  return async (req: Request, res: Response, passOn: () => unknown): Promise<void> => {
    // The procedures' signal, aborted when the client goes away before its answer. One for the request:
    // tRPC's own per-call signals abort only with it, but for subscriptions.
    const controller = new AbortController();
    res.once('close', () => {
      if (!res.writableEnded) controller.abort();
    });
    res.setHeader('vary', 'trpc-accept, accept');
    res.setHeader('content-type', 'application/json');
    let info: TRPCRequestInfo | undefined;
    let ctx: TContext | undefined;
    try {
      info = await requestInfo(req, controller.signal);
      if (info.type === 'subscription') {
        // A stream of server-sent events (or its refusal), which tRPC's adapter writes.
        res.removeHeader('vary');
        res.removeHeader('content-type');
        return void passOn();
      }
      let ctxError: TRPCError | undefined;
      try {
        const made = opts.createContext(req, res, info);
        ctx = made instanceof Promise ? await made : made;
      } catch (cause) {
        ctxError = getTRPCErrorFromUnknown(cause);
      }
      const { calls } = info;
      if (!info.isBatchCall) {
        const outcome = await call(req, res, calls[0], ctx, ctxError, controller.signal);
        if (outcome.ok && isDataStream(outcome.data)) throw streamLikeResult();
        if (outcome.ok) return answer(res, { result: { data: outcome.data } }, [], ctx, info);
        return answer(res, { error: errorShape(outcome.error, ctx, info.type, calls[0]) }, [outcome.error], ctx, info);
      }
      const outcomes = await Promise.all(calls.map((c) => call(req, res, c, ctx, ctxError, controller.signal)));
      const errors = outcomes.map((o) => (!o.ok ? o.error : isDataStream(o.data) ? streamLikeResult() : undefined));
      const envelopes = outcomes.map((o, i): Envelope => {
        const error = errors[i];
        if (!error) return { result: { data: (o as { data: unknown }).data } };
        return { error: errorShape(error, ctx, calls[i].procedure?._def.type ?? 'unknown', calls[i]) };
      });
      answer(res, envelopes, errors, ctx, info);
    } catch (cause) {
      // What fails the whole request: its calls could not be read, a stream-like result, an answer that
      // does not serialise. No status of this answer is set yet: it is this error's.
      const error = getTRPCErrorFromUnknown(cause);
      const type = info?.type ?? 'unknown';
      opts.onError({ error, req, path: undefined, input: undefined, ctx, type });
      answer(res, { error: errorShape(error, ctx, type) }, [error], ctx, info);
    }
  };
}
