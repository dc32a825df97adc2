/**
 * Debian's `coturn` as the TURN (and STUN) server of a test, the way a deployment runs it beside
 * svc-cloud: the TURN REST API's time-limited credentials (`use-auth-secret`, svc-cloud mints them
 * with the same secret), UDP on 3478 and TURN over TLS on 443 for pilots whose UDP is blocked,
 * with a self-signed certificate made for the test.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Options of {@link startTurnServer}. */
export interface TurnServerOptions {
  /** Addresses it listens on (STUN, TURN over UDP, TURN over TLS). */
  readonly listen: readonly string[];
  /** The address relayed traffic leaves from and arrives at. */
  readonly relay: string;
  /** coturn's `static-auth-secret`: svc-cloud's `SVC_TURN_SECRET`. */
  readonly secret: string;
  /** Runs it through this command prefix (e.g. `['ip', 'netns', 'exec', '<namespace>']`). */
  readonly prefix?: readonly string[];
  /** UDP port of STUN and TURN (default 3478). */
  readonly port?: number;
  /** TCP port of TURN over TLS (default 443). */
  readonly tlsPort?: number;
}

/** A running coturn. */
export interface TurnServer {
  /** `stun:` URL on the first listening address. */
  readonly stunUrl: string;
  /** `turn:` over UDP on the first listening address. */
  readonly turnUrl: string;
  /** `turns:` (TLS over TCP) on the first listening address. */
  readonly turnsUrl: string;
  /**
   * SHA-256 of the TLS certificate's public key, base64: what Chromium's
   * `--ignore-certificate-errors-spki-list` takes to accept this test's self-signed certificate.
   */
  readonly certificateSpki: string;
  readonly process: ChildProcess;
  /** What coturn logged so far. */
  log(): string;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 15_000;
/** How long coturn may take to exit on SIGTERM before it is killed. */
const STOP_GRACE_MS = 3_000;

/** Starts coturn and resolves once its UDP and TLS listeners are open. */
export async function startTurnServer(options: TurnServerOptions): Promise<TurnServer> {
  const port = options.port ?? 3478;
  const tlsPort = options.tlsPort ?? 443;
  const dir = await mkdtemp(join(tmpdir(), 'svc-turn-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-subj',
    '/CN=turn.svc.test',
    '-days',
    '2',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  const spki = new X509Certificate(await readFile(cert)).publicKey.export({ type: 'spki', format: 'der' });
  const certificateSpki = createHash('sha256').update(spki).digest('base64');
  const args = [
    '-n',
    '--no-cli',
    '--log-file=stdout',
    '--simple-log',
    '--verbose',
    '--fingerprint',
    '--use-auth-secret',
    `--static-auth-secret=${options.secret}`,
    '--realm=svc.test',
    `--listening-port=${port}`,
    `--tls-listening-port=${tlsPort}`,
    ...options.listen.map((address) => `--listening-ip=${address}`),
    `--relay-ip=${options.relay}`,
    `--cert=${cert}`,
    `--pkey=${key}`,
    '--no-dtls',
    '--min-port=49152',
    '--max-port=49407',
    `--pidfile=${join(dir, 'turnserver.pid')}`,
    // Its own database in the test's folder, never the system's /var/lib/turn.
    `--userdb=${join(dir, 'turndb')}`,
  ];
  const [command, ...rest] = [...(options.prefix ?? []), 'turnserver', ...args];
  // A process group of its own: a wrapper in the prefix (faketime) may fork coturn.
  const child = spawn(command!, rest, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      signalGroup('SIGTERM');
      const killer = setTimeout(() => signalGroup('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(killer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  const first = options.listen[0];
  if (first === undefined) throw new TypeError('startTurnServer needs at least one listening address');
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`coturn did not open its listeners within ${START_TIMEOUT_MS} ms:\n${out}`)),
      START_TIMEOUT_MS,
    );
    const check = () => {
      const udp = out.includes(`UDP listener opened on: ${first}:${port}`);
      const tls = out.includes(`TLS/TCP listener opened on : ${first}:${tlsPort}`);
      if (udp && tls) {
        clearTimeout(timer);
        resolve();
      }
    };
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      check();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`coturn exited (${String(code)}) while starting:\n${out}`));
    });
  }).catch(async (err: unknown) => {
    await stop();
    throw err;
  });
  return {
    stunUrl: `stun:${first}:${port}`,
    turnUrl: `turn:${first}:${port}?transport=udp`,
    turnsUrl: `turns:${first}:${tlsPort}?transport=tcp`,
    certificateSpki,
    process: child,
    log: () => out,
    stop,
  };
}
