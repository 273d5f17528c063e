// The bench's loopback receivers read HTTP/1.1 straight from `node:net` (see bench/receiver.ts for why).
import type net from 'node:net';

const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;

/**
 * Calls `onRequest` with the head of each request that arrives in full on `socket`, kept alive. Bodies must
 * carry a Content-Length (what the worker sends); chunked bodies are not read.
 */
export function eachRequest(socket: net.Socket, onRequest: (head: string) => void): void {
  let buffered = '';
  socket.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('latin1');
    for (;;) {
      const headEnd = buffered.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = buffered.slice(0, headEnd);
      const end = headEnd + 4 + Number(CONTENT_LENGTH.exec(head)?.[1] ?? 0);
      if (buffered.length < end) return;
      buffered = buffered.slice(end);
      onRequest(head);
    }
  });
}
