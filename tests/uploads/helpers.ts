// Fixtures of tests/uploads: an app on STORAGE_PROVIDER=LOCAL with its own temporary folder (so a test can
// list exactly what was written, and see anything that escaped the folder), multipart forms, byte-exact
// downloads, and hand-made files: real images from sharp, PNG chunks with valid CRCs, and headers that
// claim huge dimensions.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ledger } from '../helpers/secret-ledger.js';

export const MiB = 1024 * 1024;

export interface LocalApp {
  app: TestApp;
  /** A temporary folder holding only `uploads/` (STORAGE_LOCAL_DIR): a file written beside it escaped. */
  root: string;
  /** STORAGE_LOCAL_DIR of the app. */
  dir: string;
  /** Every file under `root`, as sorted paths relative to it (`uploads/files/<uuid>.png`). */
  listing(): Promise<string[]>;
  close(): Promise<void>;
}

export async function startLocalApp(label: string, env: Record<string, string> = {}): Promise<LocalApp> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), `uploads-${label}-`));
  const dir = path.join(root, 'uploads');
  await fs.mkdir(dir);
  const app = await startTestApp({ STORAGE_PROVIDER: 'LOCAL', STORAGE_LOCAL_DIR: dir, ...env });
  return {
    app,
    root,
    dir,
    listing: () => listFiles(root),
    async close() {
      await app.close();
      await fs.rm(root, { recursive: true, force: true });
    },
  };
}

export async function listFiles(root: string): Promise<string[]> {
  const names = await fs.readdir(root, { recursive: true });
  const files: string[] = [];
  for (const name of names) {
    if ((await fs.lstat(path.join(root, name))).isFile()) files.push(name.split(path.sep).join('/'));
  }
  return files.sort();
}

/** The files that appeared under `root` since `before`. */
export async function addedSince(local: LocalApp, before: string[]): Promise<string[]> {
  return (await local.listing()).filter((f) => !before.includes(f));
}

export function form(
  field: string,
  data: Buffer,
  name: string,
  type = 'application/octet-stream',
  extra: Record<string, string> = {},
) {
  const f = new FormData();
  for (const [k, v] of Object.entries(extra)) f.append(k, v);
  f.append(field, new Blob([new Uint8Array(data)], { type }), name);
  return f;
}

/** A GET whose body is kept as bytes. */
export async function download(app: TestApp, urlPath: string, token?: string) {
  const res = await fetch(app.url + urlPath, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const bytes = Buffer.from(await res.arrayBuffer());
  ledger.observe(`GET ${urlPath}`, bytes.toString('latin1'));
  return { status: res.status, headers: res.headers, bytes };
}

/**
 * Starts a multipart upload of 8 MiB in `field` but sends only its headers and first 64 KiB, then waits:
 * answers what the server says while the rest of the body is still owed, or undefined after `waitMs` (the
 * server is waiting for the body). The request is dropped either way.
 */
export function answerBeforeBody(app: TestApp, urlPath: string, field: string, token?: string, waitMs = 3000) {
  const boundary = `----upload-${crypto.randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`,
  );
  const req = http.request(app.url + urlPath, {
    method: 'POST',
    headers: {
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(8 * MiB),
      ...(token && { authorization: `Bearer ${token}` }),
    },
  });
  if (token) ledger.sent(token, 'a bearer token');
  return new Promise<{ status: number; body: any } | undefined>((resolve, reject) => {
    const settle = (answer: { status: number; body: any } | undefined, err?: Error) => {
      clearTimeout(timer);
      req.destroy();
      if (err) reject(err);
      else resolve(answer);
    };
    const timer = setTimeout(() => settle(undefined), waitMs);
    req.on('error', (err) => settle(undefined, err));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        ledger.observe(`POST ${urlPath.split('?')[0]}`, text);
        settle({ status: res.statusCode!, body: JSON.parse(text) });
      });
    });
    req.write(Buffer.concat([head, Buffer.alloc(64 * 1024)]));
  });
}

// ------------------------------------------------------------------ images

export const solidImage = (width: number, height: number, background = '#3366cc') =>
  sharp({ create: { width, height, channels: 3, background } });

export const pngOf = (width: number, height: number, background?: string) =>
  solidImage(width, height, background).png().toBuffer();

/**
 * An animated GIF of `frames` frames of `size` x `size` pixels of one colour, each with its own graphic
 * control block: sharp encodes one frame, and its blocks are repeated (encoding 200,000 frames with sharp
 * takes half a minute). 200,000 frames of 8 x 8 make 5.6 MB: 12.8 megapixels in all.
 */
export async function manyFramesGif(frames: number, size = 8): Promise<Buffer> {
  const one = await solidImage(size, size).gif().toBuffer();
  // Header, logical screen descriptor and global colour table; then extension and image blocks; 0x3b.
  const packed = one[10];
  let i = 13 + (packed & 0x80 ? 3 * (1 << ((packed & 7) + 1)) : 0);
  const head = one.subarray(0, i);
  const afterSubBlocks = (j: number) => {
    while (one[j] !== 0) j += one[j] + 1;
    return j + 1;
  };
  let image: Buffer | undefined;
  while (one[i] !== 0x3b) {
    const start = i;
    if (one[i] === 0x21) i = afterSubBlocks(i + 2);
    else if (one[i] === 0x2c) {
      const local = one[i + 9];
      i += 10 + (local & 0x80 ? 3 * (1 << ((local & 7) + 1)) : 0);
      i = afterSubBlocks(i + 1);
      image = one.subarray(start, i);
    } else throw new Error(`unexpected GIF block 0x${one[i].toString(16)} at ${i}`);
  }
  // A delay of 10 ms, no transparency.
  const control = Buffer.from([0x21, 0xf9, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00]);
  const frame = Buffer.concat([control, image!]);
  return Buffer.concat([head, ...Array<Buffer>(frames).fill(frame), Buffer.from([0x3b])]);
}

/** A 36-megapixel JPEG (7,200 x 5,000) of smooth content: about 1.7 MB, under every upload cap. */
export async function largeJpeg(): Promise<Buffer> {
  const small = Buffer.alloc(720 * 500 * 3);
  for (let k = 0; k < small.length; k++) small[k] = (Math.sin(k / 97) * 60 + 128 + ((k * 2654435761) >>> 30)) & 0xff;
  return sharp(small, { raw: { width: 720, height: 500, channels: 3 } })
    .resize(7200, 5000)
    .jpeg({ quality: 50 })
    .toBuffer();
}

/** Decoded RGB pixels, to compare images whatever their encoding. */
export async function pixels(data: Buffer) {
  const { data: raw, info } = await sharp(data).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { raw, width: info.width, height: info.height };
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32(data: Buffer): number {
  let c = 0xffffffff;
  for (const byte of data) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** One PNG chunk: length, type, data, CRC over type and data. */
export function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed));
  return Buffer.concat([length, typed, crc]);
}

/** `png` with a tEXt chunk (keyword Comment) right after its IHDR (signature 8 + IHDR chunk 25 bytes). */
export function withTextChunk(png: Buffer, text: string): Buffer {
  if (!png.subarray(0, 8).equals(PNG_SIGNATURE) || png.toString('latin1', 12, 16) !== 'IHDR')
    throw new Error('not a PNG');
  return Buffer.concat([
    png.subarray(0, 33),
    pngChunk('tEXt', Buffer.from(`Comment\0${text}`, 'latin1')),
    png.subarray(33),
  ]);
}

/** A well-formed PNG (valid CRCs) whose IHDR claims `width` x `height` RGB pixels, with a token IDAT. */
export function pngClaiming(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type RGB
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', Buffer.from([0x78, 0x9c, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01])),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A GIF whose screen and single frame claim `width` x `height` pixels (one tiny LZW block). */
export function gifClaiming(width: number, height: number): Buffer {
  const le16 = (n: number) => Buffer.from([n & 0xff, (n >> 8) & 0xff]);
  return Buffer.concat([
    Buffer.from('GIF89a', 'latin1'),
    le16(width),
    le16(height),
    Buffer.from([0x80, 0x00, 0x00]), // global colour table of 2 entries
    Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff, 0xff]),
    Buffer.from([0x2c]),
    le16(0),
    le16(0),
    le16(width),
    le16(height),
    Buffer.from([0x00]),
    Buffer.from([0x02, 0x02, 0x44, 0x01, 0x00]), // LZW minimum code size 2, one sub-block, terminator
    Buffer.from([0x3b]),
  ]);
}

export const TEXT_AS_PNG = Buffer.from('just some text, honest\nnot an image at all\n');
export const HTML = Buffer.from('<!doctype html><html><body><script>document.title = "owned"</script></body></html>\n');
export const SVG_WITH_SCRIPT = Buffer.from(
  '<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(document.cookie)</script><rect width="10" height="10"/></svg>\n',
);
export const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
);

/** `data` padded with zero bytes (after the image's end) to exactly `size` bytes. */
export function padTo(data: Buffer, size: number): Buffer {
  if (size < data.length) throw new Error('already larger');
  return Buffer.concat([data, Buffer.alloc(size - data.length)]);
}
