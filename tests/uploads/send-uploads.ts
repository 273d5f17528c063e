// A client on another machine, for tests/uploads/image-work.test.ts: sends `count` uploads of a file at
// once (multipart, field `file`) and says `sent` on stdout once every body has been written, then prints
// the answers as one JSON line. It runs at the lowest priority, every thread of it, so that its own work
// does not count into the times of the test's process.
// Usage: node --import tsx send-uploads.ts <url> <token> <file> <content-type> <count>
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';

for (const tid of fs.existsSync('/proc/self/task') ? fs.readdirSync('/proc/self/task') : [])
  os.setPriority(Number(tid), os.constants.priority.PRIORITY_LOW);

const [url, token, file, type, count] = process.argv.slice(2);
const data = fs.readFileSync(file);
let sent = 0;

function upload(i: number): Promise<{ status: number; text: string }> {
  const boundary = `----upload-${crypto.randomBytes(8).toString('hex')}`;
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="upload-${i}"\r\n` +
        `Content-Type: ${type}\r\n\r\n`,
    ),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(body.length),
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    req.end(body, () => {
      if (++sent === Number(count)) process.stdout.write('sent\n');
    });
  });
}

const answers = await Promise.all(Array.from({ length: Number(count) }, (_, i) => upload(i)));
process.stdout.write(`${JSON.stringify(answers)}\n`);
