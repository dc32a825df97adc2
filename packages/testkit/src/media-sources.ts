import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Video codecs the test sources can produce. */
export type TestCodec = 'h264' | 'h265' | 'mjpeg';

/** Options of an RTP test source. */
export interface RtpSourceOptions {
  readonly codec: TestCodec;
  /** Destination host and port of the RTP packets. */
  readonly host?: string;
  readonly port: number;
  /** Frames to send, then exit (default 60). */
  readonly frames?: number;
  readonly fps?: number;
  readonly width?: number;
  readonly height?: number;
  /** Keyframe interval in frames (default 30). */
  readonly gop?: number;
  /** H.264: slices per frame (default 1). */
  readonly slices?: number;
  /** H.265: open GOP, so keyframes after the first are CRA pictures (default false). */
  readonly openGop?: boolean;
  /** Pace at the frame rate like a camera (default true); false sends as fast as possible. */
  readonly realtime?: boolean;
  /**
   * Runs the encoder through this command prefix (e.g. `['ip', 'netns', 'exec', '<namespace>']`
   * for a camera in a test's network namespace). Default: none.
   */
  readonly prefix?: readonly string[];
}

/** A running source process. */
export interface RunningSource {
  readonly process: ChildProcess;
  /** Resolves with the exit code when the process ends; stderr is included on failure. */
  readonly done: Promise<number>;
  /** Kills the process if it is still running and waits for it to end. */
  stop(): Promise<void>;
}

/** Sends a test pattern as RTP with ffmpeg (the recipes of the project's testing page). */
export function ffmpegRtpSource(options: RtpSourceOptions): RunningSource {
  const { fps = 30, width = 320, height = 240, frames = 60, gop = 30 } = options;
  const input = ['-f', 'lavfi', '-i', `testsrc2=size=${width}x${height}:rate=${fps}`];
  const pace = options.realtime === false ? [] : ['-re'];
  const codecArgs: Record<TestCodec, string[]> = {
    h264: [
      '-c:v',
      'libx264',
      '-profile:v',
      'baseline',
      '-preset',
      'ultrafast',
      '-tune',
      'zerolatency',
      '-x264-params',
      `sliced-threads=0:slices=${options.slices ?? 1}`,
      '-g',
      String(gop),
      '-bf',
      '0',
      '-pix_fmt',
      'yuv420p',
      '-bsf:v',
      'dump_extra=freq=keyframe',
    ],
    h265: [
      '-c:v',
      'libx265',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p',
      '-x265-params',
      `keyint=${gop}:min-keyint=${gop}:bframes=0:open-gop=${options.openGop ? 1 : 0}:repeat-headers=1:log-level=error`,
    ],
    mjpeg: ['-c:v', 'mjpeg', '-pix_fmt', 'yuvj420p', '-huffman', 'default', '-q:v', '5'],
  };
  const payloadType = options.codec === 'mjpeg' ? '26' : '96';
  const args = [
    '-hide_banner',
    '-loglevel',
    'error',
    '-nostdin',
    ...pace,
    ...input,
    '-frames:v',
    String(frames),
    ...codecArgs[options.codec],
    '-f',
    'rtp',
    '-payload_type',
    payloadType,
    `rtp://${options.host ?? '127.0.0.1'}:${options.port}?pkt_size=1200`,
  ];
  return spawnSource('ffmpeg', args, options.prefix);
}

/** Sends a test pattern as RTP with GStreamer. */
export function gstreamerRtpSource(options: RtpSourceOptions): RunningSource {
  const { fps = 30, width = 320, height = 240, frames = 60, gop = 30 } = options;
  const source = `videotestsrc num-buffers=${frames} is-live=${options.realtime !== false} pattern=ball ! video/x-raw,format=I420,width=${width},height=${height},framerate=${fps}/1`;
  const encoders: Record<TestCodec, string> = {
    h264: `x264enc tune=zerolatency speed-preset=ultrafast bframes=0 sliced-threads=false key-int-max=${gop} ! rtph264pay config-interval=-1 pt=96 mtu=1200`,
    h265: `x265enc tune=zerolatency speed-preset=ultrafast key-int-max=${gop} ! rtph265pay config-interval=-1 pt=96 mtu=1200`,
    mjpeg: 'jpegenc ! rtpjpegpay mtu=1200',
  };
  const pipeline = `${source} ! ${encoders[options.codec]} ! udpsink host=${options.host ?? '127.0.0.1'} port=${options.port}`;
  return spawnSource('gst-launch-1.0', ['-q', ...pipeline.split(' ')], options.prefix);
}

function spawnSource(command: string, args: string[], prefix: readonly string[] = []): RunningSource {
  const [first, ...rest] = [...prefix, command, ...args];
  const child = spawn(first!, rest, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0 || signal === 'SIGTERM' || signal === 'SIGKILL') resolve(code ?? 0);
      else reject(new Error(`${command} exited with ${code ?? signal}: ${stderr.trim()}`));
    });
  });
  return {
    process: child,
    done,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await done.catch(() => {});
    },
  };
}

/** What ffmpeg made of a file: frames decoded and every error line it printed. */
export interface DecodeReport {
  readonly frames: number;
  readonly errors: string[];
}

/**
 * Decodes `file` (an elementary stream: `h264`, `hevc` or `mjpeg`) with ffmpeg and counts the
 * frames; `errors` holds whatever `ffmpeg -v error` printed.
 */
export async function decodeWithFfmpeg(
  file: string,
  format: 'h264' | 'hevc' | 'mjpeg',
): Promise<DecodeReport> {
  const { stdout, stderr } = await run(
    'ffmpeg',
    ['-hide_banner', '-v', 'error', '-nostdin', '-f', format, '-i', file, '-f', 'framemd5', '-'],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  const frames = stdout.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length;
  return { frames, errors: stderr.split('\n').filter((line) => line.trim() !== '') };
}
