// A DNS server on loopback (UDP, dns2) that answers the TXT records a test sets, so that domain
// verification runs its real look-up: the app is started with DNS_SERVERS=<this server's address>.
// Unknown names are NXDOMAIN; `failing` makes every answer SERVFAIL (a resolver that is down).
import dns2 from 'dns2';

const { Packet } = dns2;
const SERVFAIL = 2;
const NXDOMAIN = 3;

export interface FakeDns {
  /** `host:port`, the value of DNS_SERVERS. */
  address: string;
  /** Sets the TXT records of a name (each string one record); an empty list removes the name. */
  setTxt(name: string, values: string[]): void;
  /** Every name asked for, in order. */
  queries: string[];
  failing: boolean;
  close(): Promise<void>;
}

export async function startFakeDns(): Promise<FakeDns> {
  const records = new Map<string, string[]>();
  const fake: Omit<FakeDns, 'address' | 'close'> = {
    setTxt(name, values) {
      if (values.length) records.set(name.toLowerCase(), values);
      else records.delete(name.toLowerCase());
    },
    queries: [],
    failing: false,
  };
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const name = (question?.name ?? '').toLowerCase();
      fake.queries.push(name);
      const values = records.get(name);
      if (fake.failing) response.header.rcode = SERVFAIL;
      else if (!values) response.header.rcode = NXDOMAIN;
      else if (question && question.type === Packet.TYPE.TXT)
        for (const value of values)
          response.answers.push(Packet.createResourceFromQuestion(question, { ttl: 0, data: value }));
      void send(response);
    },
  });
  const { udp } = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  if (!udp) throw new Error('the fake DNS server did not listen on UDP');
  return Object.assign(fake, {
    address: `127.0.0.1:${udp.port}`,
    close: () => server.close(),
  });
}
