// What every bench script needs of this machine: a free loopback port for a child process, and a short-lived
// Postgres client (the admin database, or a bench's own).
import net from 'node:net';
import pg from 'pg';

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** `fn` with a client of the database at `url`, closed afterwards. */
export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The rows of one statement on the database at `url`. */
export const queryRows = <T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []) =>
  withClient(url, async (client) => (await client.query<T>(text, values)).rows);
