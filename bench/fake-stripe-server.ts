// The fake Stripe of the tests (tests/helpers/fake-stripe.ts) as a process of its own, for
// bench/billing-usage.ts: its work then shares no event loop with the load. Prints its URL as one JSON
// line; the key comes from FAKE_STRIPE_API_KEY. GET /__fake/meter-events answers what it has counted.
import { startFakeStripe } from '../tests/helpers/fake-stripe.js';

const fake = await startFakeStripe({ apiKey: process.env.FAKE_STRIPE_API_KEY ?? '' });
process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
process.once('SIGTERM', () => void fake.close().then(() => process.exit(0)));
