/**
 * A live camera for glass-to-glass measurements: this process draws each picture, stamps the
 * moment it drew it into the picture as a pixel code, and hands it to a real ffmpeg (libx264,
 * zerolatency, one thread) whose RTP this process relays to the daemon, adding RTCP sender reports
 * that map each frame's RTP time to the moment it was drawn, as a camera's own would. (ffmpeg's
 * reports map RTP time to when its first packet left, which puts every capture time late by the
 * encoder's start-up.) The pilot page
 * reads the code back from what it painted (`glass-code.ts`, run in the page), so capture →
 * glass is measured from the pixels, encoder, daemon, network, decoder and presenter included.
 *
 * The code is `glass-code.ts`'s.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { BLOCK, CODE_BLOCKS, CODE_MODULUS, glassBits } from './glass-code.js';

const WHITE = 235;
const BLACK = 16;

/** Options of {@link startGlassSource}. */
export interface GlassSourceOptions {
  /** The daemon's RTP port on 127.0.0.1 (sender reports go to port + 1). */
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
  const relay = await startRelay(options.port, options.fps);
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
      `rtp://127.0.0.1:${relay.port}?pkt_size=1200`,
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
  relay.captureTime = (frame) => captured[frame];
  return {
    captured,
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      relay.close();
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

/** NTP's epoch (1900) is this many seconds before the Unix epoch. */
const NTP_UNIX_OFFSET_S = 2_208_988_800;
/** A sender report goes out at least this often, ms. */
const REPORT_EVERY_MS = 500;

interface Relay {
  /** Where ffmpeg sends its RTP (its RTCP goes to port + 1, swallowed). */
  readonly port: number;
  /** The capture time (epoch ms) of frame `n` of the stream, when known. */
  captureTime: (frame: number) => number | undefined;
  close(): void;
}

/**
 * Takes ffmpeg's RTP on a local port pair, forwards every packet to the daemon at once, and sends
 * the daemon a sender report (RFC 3550 section 6.4.1) for the newest frame every half second,
 * mapping its RTP timestamp to when the picture was drawn.
 */
async function startRelay(daemonPort: number, fps: number): Promise<Relay> {
  const [rtp, rtcp] = await boundPair();
  const out = dgram.createSocket('udp4');
  let first: number | undefined;
  let lastTs: number | undefined;
  let lastReport = Number.NEGATIVE_INFINITY;
  let packets = 0;
  let octets = 0;
  const relay: Relay = {
    port: rtp.address().port,
    captureTime: () => undefined,
    close: () => {
      for (const socket of [rtp, rtcp, out]) socket.close();
    },
  };
  rtcp.on('message', () => {}); // ffmpeg's own reports: not a camera's, dropped
  rtp.on('message', (packet) => {
    out.send(packet, daemonPort, '127.0.0.1');
    if (packet.byteLength < 12) return;
    packets++;
    octets += packet.byteLength - 12;
    const ts = packet.readUInt32BE(4);
    const ssrc = packet.readUInt32BE(8);
    first ??= ts;
    if (ts === lastTs) return;
    lastTs = ts;
    const now = performance.now();
    if (now - lastReport < REPORT_EVERY_MS) return;
    const frame = Math.round(((ts - first + 0x1_0000_0000) % 0x1_0000_0000) / (90_000 / fps));
    const drawnAt = relay.captureTime(frame);
    if (drawnAt === undefined) return;
    lastReport = now;
    const report = Buffer.alloc(28);
    report.writeUInt8(0x80, 0); // version 2, no padding, no report blocks
    report.writeUInt8(200, 1); // sender report
    report.writeUInt16BE(6, 2); // length in 32-bit words, minus one
    report.writeUInt32BE(ssrc, 4);
    const seconds = Math.floor(drawnAt / 1000);
    report.writeUInt32BE((seconds + NTP_UNIX_OFFSET_S) >>> 0, 8);
    report.writeUInt32BE(Math.floor(((drawnAt / 1000 - seconds) * 0x1_0000_0000) >>> 0), 12);
    report.writeUInt32BE(ts, 16);
    report.writeUInt32BE(packets >>> 0, 20);
    report.writeUInt32BE(octets >>> 0, 24);
    out.send(report, daemonPort + 1, '127.0.0.1');
  });
  return relay;
}

/** Two sockets on consecutive local ports: RTP on n, RTCP on n + 1, where ffmpeg sends them. */
async function boundPair(): Promise<[dgram.Socket, dgram.Socket]> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const rtp = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => rtp.bind(0, '127.0.0.1', resolve));
    const rtcp = dgram.createSocket('udp4');
    const bound = await new Promise<boolean>((resolve) => {
      rtcp.once('error', () => resolve(false));
      rtcp.bind(rtp.address().port + 1, '127.0.0.1', () => resolve(true));
    });
    if (bound) return [rtp, rtcp];
    rtp.close();
    rtcp.close();
  }
  throw new Error('no two consecutive free UDP ports on 127.0.0.1 for the glass source relay');
}
