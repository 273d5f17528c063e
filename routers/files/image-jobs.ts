// The image work of uploads, as the image process (image-worker.ts) runs it with sharp: an image's size is
// checked from its header first, then it is decoded and re-encoded, so that nothing of the original payload
// survives. Nothing here loads sharp: the image process hands it in, and the API process never loads it.
import type { ResizeOptions, default as SharpFactory } from 'sharp';

/** About 40 megapixels a frame: a real photo passes, a header claiming 50,000 x 50,000 does not. */
export const MAX_PIXELS = 40_000_000;
/**
 * An animation's frames, and its pixels across all of them: its decoding work grows with both. A 5 MB GIF
 * of 200,000 frames of 8 x 8 (12.8 megapixels in all) took 2.7 s to re-encode.
 */
export const MAX_FRAMES = 1_000;
export const MAX_TOTAL_PIXELS = 100_000_000;

export type ImageJob =
  /** A workspace file: re-encoded in its own format, same size (a GIF's animation kept). */
  | { kind: 'same-format'; data: Uint8Array; animated: boolean }
  /** An avatar or a logo: resized, to WebP. */
  | { kind: 'webp'; data: Uint8Array; resize: ResizeOptions & { width: number; height: number } };

export type ImageOutcome =
  { data: Uint8Array } | { refused: 'unreadable' } | { refused: 'frames'; frames: number } | { refused: 'pixels' };

type Sharp = typeof SharpFactory;

/** Runs `job`: its re-encoded bytes, or why the image is refused. */
export async function runImageJob(sharp: Sharp, job: ImageJob): Promise<ImageOutcome> {
  const buffer = Buffer.from(job.data.buffer, job.data.byteOffset, job.data.byteLength);
  const animated = job.kind === 'same-format' && job.animated;
  let frames: number;
  let frameSize: number;
  try {
    // From the header (a GIF's frames are counted without decoding them).
    const meta = await sharp(buffer, { animated, limitInputPixels: false }).metadata();
    frames = animated ? (meta.pages ?? 1) : 1;
    frameSize = meta.width * (animated ? (meta.pageHeight ?? meta.height) : meta.height);
  } catch {
    return { refused: 'unreadable' };
  }
  if (frames > MAX_FRAMES) return { refused: 'frames', frames };
  if (!(frameSize > 0) || frameSize > MAX_PIXELS) return { refused: 'unreadable' };
  if (frameSize * frames > MAX_TOTAL_PIXELS) return { refused: 'pixels' };
  try {
    const data =
      job.kind === 'webp'
        ? await sharp(buffer, { limitInputPixels: MAX_PIXELS, failOn: 'error' })
            .rotate()
            .resize(job.resize)
            .webp({ quality: 85 })
            .toBuffer()
        : // An animation's frames were counted and measured above: the limit here is on all of them.
          await sharp(buffer, { limitInputPixels: animated ? MAX_TOTAL_PIXELS : MAX_PIXELS, failOn: 'error', animated })
            .rotate()
            .toBuffer();
    return { data };
  } catch {
    return { refused: 'unreadable' };
  }
}
