// Request fields added by this service's middleware.
import 'express-serve-static-core';

declare module 'express-serve-static-core' {
  interface Request {
    /** X-Request-Id of this request (the client's when safe, else generated). */
    id: string;
    /** The exact bytes of a JSON body, for signature checks. */
    rawBody?: Buffer;
  }
}
