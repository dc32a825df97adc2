import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { NetnsError, toolPath, waitUntil } from './commands.js';
import { type UdpPacket, udpPacketsFromPcap } from './pcap.js';

/** How long tcpdump may take to open the interface and say "listening on". */
const LISTEN_TIMEOUT_MS = 10_000;
/** How long `stop()` waits after SIGINT before SIGKILL. */
const STOP_GRACE_MS = 5000;
/** Default limit of {@link PacketCapture.waitFor}. */
const WAIT_FOR_TIMEOUT_MS = 10_000;

/** A running tcpdump that writes a pcap file; see {@link Topology.capture}. */
export interface PacketCapture {
  /** The pcap file tcpdump writes (removed with the topology). */
  readonly file: string;
  /** The UDP datagrams written so far (tcpdump writes each packet at once). */
  packets(): Promise<UdpPacket[]>;
  /**
   * Resolves with the first captured UDP datagram for which `predicate` is true, polling the file.
   * Use it before {@link PacketCapture.stop} when a packet must be in the result: tcpdump reads
   * packets a moment after the kernel has sent them.
   *
   * @throws NetnsError `timeout` after `timeoutMs` (default 10 000 ms).
   */
  waitFor(predicate: (packet: UdpPacket) => boolean, timeoutMs?: number): Promise<UdpPacket>;
  /** Stops tcpdump and resolves with every UDP datagram it wrote. Safe to call more than once. */
  stop(): Promise<UdpPacket[]>;
}

type CaptureState =
  | { readonly kind: 'running'; readonly child: ChildProcess; readonly exited: Promise<void> }
  | { readonly kind: 'stopping'; readonly done: Promise<UdpPacket[]> };

/** Reads the UDP datagrams of a pcap file, or none while tcpdump has not written its header yet. */
async function readUdp(file: string): Promise<UdpPacket[]> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  if (bytes.length === 0) return [];
  return udpPacketsFromPcap(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
}

/**
 * Starts tcpdump inside a namespace and resolves once it listens.
 *
 * @param ipPath - The `ip` executable.
 * @param namespace - The namespace name.
 * @param file - The pcap file to write; its name should end in `.pcap` (Debian's AppArmor
 *   profile for tcpdump lets it write such files anywhere).
 * @param track - Called with the tcpdump process as soon as it is spawned, so the topology can
 *   end it at close.
 */
export async function startCapture(
  ipPath: string,
  namespace: string,
  iface: string,
  filter: string | undefined,
  file: string,
  track: (child: ChildProcess) => void,
): Promise<PacketCapture> {
  const tcpdump = toolPath('tcpdump');
  // -U: write each packet at once; --immediate-mode: hand packets to tcpdump without batching
  // (else they wait in the kernel's ring and are lost at SIGINT); -Z root: keep root, so it can
  // write into the topology's private temporary directory.
  const args = ['netns', 'exec', namespace, tcpdump, '-i', iface, '-n', '-U', '--immediate-mode'];
  args.push('-Z', 'root', '-w', file);
  if (filter !== undefined && filter.trim() !== '') args.push(filter);
  const child = spawn(ipPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  track(child);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new NetnsError(
          'timeout',
          `tcpdump on ${iface} did not start listening within ${LISTEN_TIMEOUT_MS} ms: ${stderr}`,
        ),
      );
    }, LISTEN_TIMEOUT_MS);
    child.stderr?.on('data', (text: string) => {
      stderr = (stderr + text).slice(-4000);
      if (stderr.includes('listening on')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new NetnsError('command-failed', `cannot start tcpdump: ${err.message}`, { cause: err }));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new NetnsError(
          'command-failed',
          `tcpdump on ${iface} in ${namespace} ended (${code ?? signal}) before listening: ${stderr.trim()}`,
        ),
      );
    });
  });

  let state: CaptureState = { kind: 'running', child, exited };
  return {
    file,
    packets: () => readUdp(file),
    async waitFor(predicate, timeoutMs = WAIT_FOR_TIMEOUT_MS) {
      let match: UdpPacket | undefined;
      await waitUntil(
        `tcpdump on ${iface} captured the awaited UDP datagram`,
        async () => {
          match = (await readUdp(file)).find(predicate);
          return match !== undefined;
        },
        timeoutMs,
      );
      return match as UdpPacket;
    },
    stop() {
      if (state.kind === 'stopping') return state.done;
      const running = state;
      const done = (async () => {
        if (running.child.exitCode === null && running.child.signalCode === null) {
          // SIGINT: tcpdump flushes the file and exits.
          running.child.kill('SIGINT');
          const timer = setTimeout(() => running.child.kill('SIGKILL'), STOP_GRACE_MS);
          await running.exited;
          clearTimeout(timer);
        }
        return readUdp(file);
      })();
      state = { kind: 'stopping', done };
      return done;
    },
  };
}
