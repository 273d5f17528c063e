// Reading the generate routes' text/event-stream answers as a front end does, with fetch: the events as
// they arrive (`next()`), every event to the end (`rest()`), and the client going away (`abort()`).
import type { TestApp } from '../helpers/app.js';

export interface SseMessage {
  /** The `event:` name; `comment` for a comment line (`: keep-alive`). */
  event: string;
  /** The parsed `data:` JSON (the comment's text for a comment). */
  data: any;
}

export interface OpenedStream {
  status: number;
  headers: Headers;
  /** The JSON body of an answer that is not a stream (a refusal). */
  json?: any;
  /** The next message (comments included); undefined at the end of the stream. */
  next(): Promise<SseMessage | undefined>;
  /** The next message that is not a comment. */
  nextEvent(): Promise<SseMessage | undefined>;
  /** Every message left, to the end of the stream (comments left out). */
  rest(): Promise<SseMessage[]>;
  /** Goes away: aborts the request and its connection. */
  abort(): void;
}

export async function openStream(
  app: TestApp,
  path: string,
  { token, body, headers = {} }: { token?: string; body?: unknown; headers?: Record<string, string> },
): Promise<OpenedStream> {
  const abort = new AbortController();
  const res = await fetch(`${app.url}${path}`, {
    method: 'POST',
    headers: {
      accept: 'text/event-stream',
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: JSON.stringify(body ?? {}),
    signal: abort.signal,
  });
  const isStream = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  const json: unknown = isStream ? undefined : await res.json();
  const reader = isStream ? res.body!.pipeThrough(new TextDecoderStream()).getReader() : undefined;
  let buffer = '';
  const next = async (): Promise<SseMessage | undefined> => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        return parse(block);
      }
      const chunk = reader ? await reader.read() : { done: true as const, value: undefined };
      if (chunk.done) return undefined;
      buffer += chunk.value;
    }
  };
  const nextEvent = async () => {
    for (;;) {
      const message = await next();
      if (message?.event !== 'comment') return message;
    }
  };
  return {
    status: res.status,
    headers: res.headers,
    json,
    next,
    nextEvent,
    async rest() {
      const all: SseMessage[] = [];
      for (let m = await nextEvent(); m; m = await nextEvent()) all.push(m);
      return all;
    },
    abort: () => abort.abort(),
  };
}

function parse(block: string): SseMessage {
  if (block.startsWith(':')) return { event: 'comment', data: block.slice(1).trim() };
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) event = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  return { event, data: JSON.parse(data.join('\n')) };
}
