import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The Debian Python with GObject introspection (the default `python3` may lack `gi`). */
const PYTHON = '/usr/bin/python3';

/** The GStreamer RTSP server script shipped with this package. */
const SCRIPT = fileURLToPath(new URL('../assets/rtsp-server.py', import.meta.url));

/** How long a server may take to start listening (Python and GStreamer load in about 1 s). */
const START_TIMEOUT_MS = 30_000;

/** How long `stop()` waits for SIGTERM before SIGKILL. */
const STOP_GRACE_MS = 3000;

/** One stream of the test server. */
export interface RtspServerMount {
  /** Mount path, starting with `/`. */
  readonly path: string;
  /** H.264 (payload type 96), H.265 (96) or Motion JPEG (26), from a live test pattern. */
  readonly codec: 'h264' | 'h265' | 'mjpeg';
}

/** Options of {@link startRtspServer}. */
export interface RtspServerOptions {
  readonly mounts: readonly RtspServerMount[];
  /** With a user, every mount requires these credentials (a server never mixes open and protected mounts). */
  readonly user?: string;
  readonly password?: string;
  /** The schemes offered in the 401 challenge; both by default (Digest and Basic). */
  readonly authMethods?: readonly ('basic' | 'digest')[];
  /** Frames per second; a keyframe every second. Default 30. */
  readonly fps?: number;
  /** Default 320. */
  readonly width?: number;
  /** Default 240. */
  readonly height?: number;
}

/** A running GStreamer RTSP server on 127.0.0.1. */
export interface RunningRtspServer {
  /** `rtsp://127.0.0.1:<port><path>`, without credentials. */
  url(path: string): string;
  readonly port: number;
  /** Stops the server; resolves once the process has exited. Safe to call more than once. */
  stop(): Promise<void>;
  /** Kills the server (SIGKILL, like a camera losing power) and starts it again on the same port. */
  restart(): Promise<void>;
}

/** A started server process and the port it reported. */
interface ServerProcess {
  readonly child: ChildProcess;
  readonly port: number;
  readonly exited: Promise<void>;
}

/** Starts the Python script and waits for the JSON line with the bound port. */
function launch(config: object): Promise<ServerProcess> {
  if (!existsSync(PYTHON)) {
    throw new Error(
      `${PYTHON} is missing: the RTSP test server needs Debian's python3-gi and GStreamer ` +
        '(`npm test` installs them as root via scripts/ensure-system.sh).',
    );
  }
  const child = spawn(PYTHON, [SCRIPT, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text: string) => {
    stderr = (stderr + text).slice(-4000);
  });
  return new Promise<ServerProcess>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the RTSP test server did not start within ${START_TIMEOUT_MS} ms: ${stderr}`));
    }, START_TIMEOUT_MS);
    lines.once('line', (line) => {
      clearTimeout(timer);
      try {
        const { port } = JSON.parse(line) as { port: number };
        resolve({ child, port, exited });
      } catch (err) {
        child.kill('SIGKILL');
        reject(new Error(`the RTSP test server printed ${JSON.stringify(line)}: ${String(err)}`));
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the RTSP test server exited (${code ?? signal}) before listening: ${stderr}`));
    });
  });
}

/** Ends a server process: SIGKILL at once, or SIGTERM with a SIGKILL fallback. */
async function terminate(server: ServerProcess, kill: boolean): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  if (kill) {
    server.child.kill('SIGKILL');
    await server.exited;
    return;
  }
  server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), STOP_GRACE_MS);
  await server.exited;
  clearTimeout(timer);
}

/**
 * Starts GStreamer's RTSP server (GstRtspServer, from `/usr/bin/python3`) on 127.0.0.1 and a free
 * port, serving live test patterns: a real camera for integration tests. RTP goes over TCP
 * (interleaved) or UDP, as the client asks. Stop it after the test.
 */
export async function startRtspServer(options: RtspServerOptions): Promise<RunningRtspServer> {
  const config = {
    mounts: options.mounts,
    fps: options.fps ?? 30,
    width: options.width ?? 320,
    height: options.height ?? 240,
    ...(options.user === undefined ? {} : { user: options.user, password: options.password ?? '' }),
    ...(options.authMethods === undefined ? {} : { authMethods: options.authMethods }),
  };
  let current = await launch({ ...config, port: 0 });
  const port = current.port;
  let stopped = false;
  return {
    port,
    url: (path: string) => `rtsp://127.0.0.1:${port}${path}`,
    async stop() {
      stopped = true;
      await terminate(current, false);
    },
    async restart() {
      if (stopped) throw new Error('restart() after stop()');
      await terminate(current, true);
      current = await launch({ ...config, port });
    },
  };
}
