import { spawn } from 'node:child_process';
import dgram from 'node:dgram';

/** What to encode for a capture. */
export interface CaptureOptions {
  readonly frames: number;
  readonly size: string;
  readonly fps: number;
  readonly gop: number;
  /** ffmpeg encoder arguments (codec, rate control). */
  readonly encoder: readonly string[];
  readonly payloadType: string;
}

/**
 * Encodes a test pattern with ffmpeg and captures its RTP packets on a loopback socket, so
 * benchmarks replay real encoder output.
 */
export async function captureRtp(options: CaptureOptions): Promise<Uint8Array[]> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  socket.setRecvBufferSize(8 * 1024 * 1024);
  const packets: Uint8Array[] = [];
  socket.on('message', (msg) => packets.push(new Uint8Array(msg)));
  const ffmpeg = spawn(
    'ffmpeg',
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-nostdin',
      '-re',
      '-readrate',
      '2',
      '-f',
      'lavfi',
      '-i',
      `testsrc2=size=${options.size}:rate=${options.fps}`,
      '-frames:v',
      String(options.frames),
      '-g',
      String(options.gop),
      ...options.encoder,
      '-f',
      'rtp',
      '-payload_type',
      options.payloadType,
      `rtp://127.0.0.1:${socket.address().port}?pkt_size=1200`,
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const code = await new Promise<number | null>((resolve) => ffmpeg.once('exit', resolve));
  await new Promise((resolve) => setTimeout(resolve, 200)); // let the last datagrams land
  socket.close();
  if (code !== 0) throw new Error(`ffmpeg exited with ${code} while capturing`);
  return packets;
}
