/**
 * A live camera for glass-to-glass measurements: this process draws each picture, stamps the
 * moment it drew it into the picture as a pixel code, and hands it to a real ffmpeg (libx264,
 * zerolatency, one thread) that sends RTP to the daemon, with RTCP sender reports. The pilot page
 * reads the code back from what it painted (`glass-code.ts`, run in the page), so capture →
 * glass is measured from the pixels, encoder, daemon, network, decoder and presenter included.
 *
 * The code is `glass-code.ts`'s.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { BLOCK, CODE_BLOCKS, CODE_MODULUS, glassBits } from './glass-code.js';

const WHITE = 235;
const BLACK = 16;

/** Options of {@link startGlassSource}. */
export interface GlassSourceOptions {
  /** RTP destination port on 127.0.0.1 (RTCP goes to port + 1). */
  readonly port: number;
  readonly width: number;
  readonly height: number;
  readonly fps: number;
  /** Keyframe interval, frames. */
  readonly gop: number;
  readonly bitrateKbps: number;
}

/** A running source. */
export interface GlassSource {
  /** Capture time (epoch ms, unwrapped) of every picture drawn, in order. */
  readonly captured: number[];
  /** Stops drawing and ffmpeg. */
  stop(): Promise<void>;
}

const epochMs = () => performance.timeOrigin + performance.now();

/** Starts drawing at `fps` and encoding; resolves once ffmpeg runs. */
export async function startGlassSource(options: GlassSourceOptions): Promise<GlassSource> {
  const { width, height, fps } = options;
  if (width < CODE_BLOCKS * BLOCK || height < 2 * BLOCK || width % 2 !== 0 || height % 2 !== 0) {
    throw new Error(`a glass source needs an even size of at least ${CODE_BLOCKS * BLOCK}x${2 * BLOCK}`);
  }
  const ffmpeg: ChildProcessWithoutNullStreams = spawn(
    'ffmpeg',
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'yuv420p',
      '-s',
      `${width}x${height}`,
      '-framerate',
      String(fps),
      '-i',
      'pipe:0',
      '-c:v',
      'libx264',
      '-profile:v',
      'baseline',
      '-preset',
      'ultrafast',
      '-tune',
      'zerolatency',
      // One thread: frame threads would hold each picture back by one frame per extra thread.
      '-threads',
      '1',
      '-x264-params',
      'sliced-threads=0',
      '-g',
      String(options.gop),
      '-bf',
      '0',
      '-b:v',
      `${options.bitrateKbps}k`,
      '-maxrate',
      `${options.bitrateKbps}k`,
      '-bufsize',
      `${Math.round(options.bitrateKbps / 4)}k`,
      '-flush_packets',
      '1',
      '-bsf:v',
      'dump_extra=freq=keyframe',
      '-f',
      'rtp',
      '-payload_type',
      '96',
      `rtp://127.0.0.1:${options.port}?pkt_size=1200`,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  ffmpeg.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  ffmpeg.stdout.resume();
  ffmpeg.stdin.on('error', () => {}); // reported through the exit below
  const exited = new Promise<void>((resolve) => ffmpeg.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    ffmpeg.once('spawn', resolve);
    ffmpeg.once('error', reject);
  });

  const lumaBytes = width * height;
  const frameBytes = lumaBytes * 1.5;
  const captured: number[] = [];
  let index = 0;
  let stopped = false;
  const start = epochMs();
  const draw = () => {
    if (stopped) return;
    const picture = Buffer.alloc(frameBytes, 128);
    background(picture, width, height, index);
    const now = epochMs();
    stamp(picture, width, Math.floor(now) % CODE_MODULUS);
    captured.push(now);
    ffmpeg.stdin.write(picture);
    index++;
    const next = start + (index * 1000) / fps;
    timer = setTimeout(draw, Math.max(0, next - epochMs()));
  };
  let timer = setTimeout(draw, 0);
  return {
    captured,
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      ffmpeg.stdin.end();
      const killer = setTimeout(() => ffmpeg.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(killer);
      if (ffmpeg.exitCode !== 0 && ffmpeg.exitCode !== null && stderr.trim() !== '') {
        throw new Error(`ffmpeg (glass source) failed: ${stderr.trim()}`);
      }
    },
  };
}

/** A moving picture below the code row, so the encoder has real work (luma only). */
function background(picture: Buffer, width: number, height: number, index: number): void {
  for (let y = 2 * BLOCK; y < height; y++) {
    const row = y * width;
    for (let x = 0; x < width; x++) picture[row + x] = (x + 2 * index + ((y >> 3) & 1) * 64) & 0xff;
  }
}

/** Writes the code row for `time` (24 bits) into the luma plane. */
function stamp(picture: Buffer, width: number, time: number): void {
  const bits = glassBits(time);
  for (let y = 0; y < BLOCK; y++) {
    const row = y * width;
    for (const [i, bit] of bits.entries()) {
      picture.fill(bit === 1 ? WHITE : BLACK, row + i * BLOCK, row + (i + 1) * BLOCK);
    }
  }
}
