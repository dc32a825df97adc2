/**
 * Ingest suite: RTP packets per second through parsing, reordering, depacketising and access-unit
 * assembly on one core, per codec, and the time from a frame's last packet to its access unit.
 * The packets are real: captured from ffmpeg encoding a 1280x720 test pattern.
 */
import { type CodecFamily, RtpPipeline } from '@svc/media';
import { captureRtp } from '../capture.js';
import { percentile } from '../stats.js';
import type { BenchSuite } from '../types.js';

const FRAMES = 300;
const CAPTURE = { size: '1280x720', fps: 30, gop: 60 };
const PASSES = 20;

const CODECS: Record<CodecFamily, { codec: string; args: string[]; payloadType: string }> = {
  h264: {
    codec: 'avc1.42c01f',
    payloadType: '96',
    args: [
      '-c:v',
      'libx264',
      '-profile:v',
      'baseline',
      '-preset',
      'ultrafast',
      '-tune',
      'zerolatency',
      '-b:v',
      '3M',
      '-x264-params',
      'sliced-threads=0',
      '-bsf:v',
      'dump_extra=freq=keyframe',
    ],
  },
  h265: {
    codec: 'hev1.1.6.L93.B0',
    payloadType: '96',
    args: [
      '-c:v',
      'libx265',
      '-preset',
      'ultrafast',
      '-b:v',
      '3M',
      '-x265-params',
      'bframes=0:repeat-headers=1:log-level=error',
    ],
  },
  mjpeg: {
    codec: 'mjpeg',
    payloadType: '26',
    args: ['-c:v', 'mjpeg', '-pix_fmt', 'yuvj420p', '-huffman', 'default', '-q:v', '5'],
  },
};

export const suite: BenchSuite = {
  description: 'RTP ingest: packets per second per core and access-unit emission delay, per codec',
  parameters: {
    frames: FRAMES,
    capture: CAPTURE,
    passes: PASSES,
    encoders: Object.fromEntries(Object.entries(CODECS).map(([k, v]) => [k, v.args.join(' ')])),
  },
  async run(report) {
    for (const family of ['h264', 'h265', 'mjpeg'] as const) {
      const { args, payloadType } = CODECS[family];
      const packets = await captureRtp({ frames: FRAMES, ...CAPTURE, encoder: args, payloadType });
      const { codec } = CODECS[family];
      let emitted = 0;
      let frameStart = 0;
      const delays: number[] = [];
      const pipeline = new RtpPipeline({
        codec,
        family,
        onAccessUnit: () => {
          emitted++;
          delays.push(performance.now() - frameStart);
        },
      });
      const span = spanOf(packets);
      // Warm up, then measure passes over the capture, renumbered so each pass continues the stream.
      feed(pipeline, packets, false, span, () => {});
      delays.length = 0;
      emitted = 0;
      const started = performance.now();
      for (let pass = 1; pass <= PASSES; pass++) {
        feed(pipeline, packets, true, span, (isMarker) => {
          if (isMarker) frameStart = performance.now();
        });
      }
      const seconds = (performance.now() - started) / 1000;
      delays.sort((a, b) => a - b);
      const params = { codec, packets: packets.length, framesPerPass: FRAMES, accessUnits: emitted };
      report({
        name: `${family}: packets through ingest`,
        value: (packets.length * PASSES) / seconds,
        unit: 'packets/s',
        better: 'higher',
        params,
      });
      report({
        name: `${family}: access units emitted per pass`,
        value: emitted / PASSES,
        unit: 'frames',
        better: 'higher',
        params,
      });
      report({
        name: `${family}: last packet to access unit, p50`,
        value: percentile(delays, 0.5),
        unit: 'ms',
        better: 'lower',
        params,
      });
      report({
        name: `${family}: last packet to access unit, p99`,
        value: percentile(delays, 0.99),
        unit: 'ms',
        better: 'lower',
        params,
      });
    }
  },
};

/**
 * Feeds one pass of the capture. With `advance`, sequence numbers and timestamps first move on by
 * one pass, so the pipeline sees one continuous stream rather than a restart.
 */
function feed(
  pipeline: RtpPipeline,
  packets: Uint8Array[],
  advance: boolean,
  span: number,
  before: (marker: boolean) => void,
): void {
  for (const p of packets) {
    if (advance) {
      const view = new DataView(p.buffer, p.byteOffset, p.byteLength);
      view.setUint16(2, (view.getUint16(2) + packets.length) & 0xffff);
      view.setUint32(4, (view.getUint32(4) + span) >>> 0);
    }
    before((p[1]! & 0x80) !== 0);
    pipeline.handleRtp(p, 0);
  }
}

/** RTP timestamp distance from the first packet to one frame past the last. */
function spanOf(packets: Uint8Array[]): number {
  const ts = (p: Uint8Array) => new DataView(p.buffer, p.byteOffset).getUint32(4);
  return (ts(packets.at(-1)!) - ts(packets[0]!) + 90_000 / CAPTURE.fps) >>> 0;
}
