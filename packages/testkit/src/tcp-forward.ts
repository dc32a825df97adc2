/**
 * A TCP forwarder process: connections to `127.0.0.1:<port>` where it runs go on to a target.
 * A robot in a test's namespace reaches svc-cloud's HTTP and signalling through it as
 * `ws://127.0.0.1:<port>/ws` (svcd takes `ws://` only for the local host; a deployment has
 * `wss://`), while its QUIC and relay traffic go through the namespace's NAT like any robot's.
 */
import { type ChildProcess, spawn } from 'node:child_process';

/** Options of {@link startTcpForwarder}. */
export interface TcpForwarderOptions {
  /** Where connections go. */
  readonly targetHost: string;
  readonly targetPort: number;
  /** Port to listen on (default: the target's, so URLs keep their port). */
  readonly port?: number;
  /** Runs it through this command prefix (e.g. `['ip', 'netns', 'exec', '<namespace>']`). */
  readonly prefix?: readonly string[];
}

/** A running forwarder. */
export interface TcpForwarder {
  readonly port: number;
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

const SCRIPT = `
const net = require('node:net');
const [port, host, targetPort] = process.argv.slice(1);
const server = net.createServer((inbound) => {
  const outbound = net.connect(Number(targetPort), host);
  inbound.pipe(outbound).pipe(inbound);
  const end = () => { inbound.destroy(); outbound.destroy(); };
  inbound.on('error', end);
  outbound.on('error', end);
  inbound.on('close', end);
  outbound.on('close', end);
});
server.listen(Number(port), '127.0.0.1', () => console.log('listening ' + server.address().port));
process.on('SIGTERM', () => process.exit(0));
`;

/** Starts the forwarder and resolves once it listens. */
export function startTcpForwarder(options: TcpForwarderOptions): Promise<TcpForwarder> {
  const port = options.port ?? options.targetPort;
  const [command, ...args] = [
    ...(options.prefix ?? []),
    process.execPath,
    '-e',
    SCRIPT,
    String(port),
    options.targetHost,
    String(options.targetPort),
  ];
  const child = spawn(command!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return new Promise<TcpForwarder>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the TCP forwarder did not start within 10 s: ${out}`));
    }, 10_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (\d+)/.exec(out);
      if (match === null) return;
      clearTimeout(timer);
      resolve({
        port: Number(match[1]),
        process: child,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          await exited;
        },
      });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`the TCP forwarder exited (${String(code)}): ${out}`));
    });
  });
}
