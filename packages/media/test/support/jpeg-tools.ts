import { type ChildProcess, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { isRtcp, parseRtpPacket } from '../../src/rtp/packet.js';
import type { RtpPacket } from '../../src/types.js';

/** Paths of the external tools the Motion JPEG tests drive. */
export const TOOLS = {
  ffmpeg: '/usr/bin/ffmpeg',
  ffprobe: '/usr/bin/ffprobe',
  gstLaunch: '/usr/bin/gst-launch-1.0',
} as const;

/** Output of a finished process. */
export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a process to completion (killed after `timeoutMs`), collecting its output. */
export async function run(command: string, args: readonly string[], timeoutMs = 60_000): Promise<RunResult> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    stdout += text;
  });
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  try {
    const [code] = (await once(child, 'close')) as [number | null];
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

/** Packets captured from one sender run. */
export interface Capture {
  readonly packets: readonly RtpPacket[];
  /** Sequence number discontinuities seen (each is a loss the depacketiser must be told about). */
  readonly gaps: number;
}

/**
 * Starts a sender that streams RTP to a UDP socket bound on 127.0.0.1 port 0 and collects its
 * packets until `frames` marker packets arrived. The sender is killed and the socket closed
 * whatever happens.
 */
export async function captureRtp(
  command: string,
  args: (port: number) => readonly string[],
  frames: number,
  timeoutMs = 30_000,
): Promise<Capture> {
  const socket = dgram.createSocket({ type: 'udp4', recvBufferSize: 8 << 20 });
  let child: ChildProcess | undefined;
  try {
    socket.bind(0, '127.0.0.1');
    await once(socket, 'listening');
    const port = socket.address().port;
    const packets: RtpPacket[] = [];
    await new Promise<void>((resolve, reject) => {
      let markers = 0;
      let stderr = '';
      const timer = setTimeout(() => {
        reject(
          new Error(`${markers} of ${frames} frames from ${command} in ${timeoutMs} ms; stderr: ${stderr}`),
        );
      }, timeoutMs);
      socket.on('message', (message: Buffer) => {
        if (isRtcp(message)) return;
        const packet = parseRtpPacket(new Uint8Array(message));
        packets.push(packet);
        if (packet.marker && ++markers === frames) {
          clearTimeout(timer);
          resolve();
        }
      });
      const started = spawn(command, args(port), { stdio: ['ignore', 'ignore', 'pipe'] });
      child = started;
      started.stderr.setEncoding('utf8').on('data', (text: string) => {
        stderr += text;
      });
      started.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      started.on('exit', (code) => {
        if (code !== 0 && code !== null) {
          clearTimeout(timer);
          reject(new Error(`${command} exited with ${code}: ${stderr}`));
        }
      });
    });
    let gaps = 0;
    for (let i = 1; i < packets.length; i++) {
      if (((packets[i]!.sequenceNumber - packets[i - 1]!.sequenceNumber) & 0xffff) !== 1) {
        gaps++;
      }
    }
    return { packets, gaps };
  } finally {
    await stopChild(child);
    socket.close();
  }
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}
