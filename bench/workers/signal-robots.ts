/**
 * A fleet of simulated robots for the signalling benchmark, run as a child process: each robot
 * opens a WebSocket to `/ws`, answers the challenge with its Ed25519 key (seeded from its index, so
 * the parent knows the public keys it enrolled), announces itself, heartbeats, and reconnects after a
 * close, once told, with the daemon's first backoff step (full jitter up to 500 ms).
 *
 * Arguments: the `/ws` URL, the first robot index, the count, and a `127.<n>` prefix of the
 * loopback source addresses.
 *
 * Messages from the parent: `{ start: true }`, and `{ reconnect: true }` when the server listens
 * again after a restart (from then on a closed connection is retried at once, after the jitter). To the parent: `{ authenticated, online, closes }`
 * every 250 ms.
 */
import { type KeyObject, sign } from 'node:crypto';
import { encodeSignalMessage, robotChallengePayload, SIGNAL_SUBPROTOCOL } from '@svc/wire';
import WebSocket from 'ws';
import { benchRobotId, benchRobotKey } from './fleet-keys.js';

const [url, firstArg, countArg, addressPrefix] = process.argv.slice(2);
const first = Number(firstArg);
const count = Number(countArg);
/** Handshakes in flight at once, like robots that do not all boot in the same millisecond. */
const MAX_CONNECTING = 500;
const RECONNECT_JITTER_MS = 500;
/**
 * Robots sharing one source address. Real robots each have their own address; thousands behind one
 * would make their reconnects collide with the server's TIME_WAIT sockets of the same address and
 * port pairs, and every collision costs a 1 s SYN retransmission.
 */
const ROBOTS_PER_ADDRESS = 100;

interface Robot {
  readonly id: string;
  /** A loopback source address shared by at most {@link ROBOTS_PER_ADDRESS} robots. */
  readonly localAddress: string;
  readonly key: KeyObject;
  readonly publicKey: string;
  socket?: WebSocket;
  online: boolean;
  heartbeat?: ReturnType<typeof setInterval>;
}

const ANNOUNCE = encodeSignalMessage({
  type: 'announce',
  candidates: [{ address: '192.0.2.1', port: 4433, family: 'ipv4', kind: 'host' }],
  cert_hashes: ['ab'.repeat(32)],
  channels: [{ id: 1, name: 'front', kind: 'video', codec: 'avc1.42e01f' }],
  max_sessions: 4,
  relay: false,
  sessions: [],
});
const HEARTBEAT = encodeSignalMessage({ type: 'heartbeat' });

let authenticated = 0;
let online = 0;
let closes = 0;
let connecting = 0;
const waiting: Robot[] = [];
/** Robots whose connection closed, until the parent says `reconnect`. */
const down: Robot[] = [];
let reconnecting = false;

function connect(robot: Robot): void {
  if (connecting >= MAX_CONNECTING) {
    waiting.push(robot);
    return;
  }
  connecting++;
  let counted = true;
  const done = () => {
    if (!counted) return;
    counted = false;
    connecting--;
    const next = waiting.shift();
    if (next !== undefined) connect(next);
  };
  const socket = new WebSocket(url!, SIGNAL_SUBPROTOCOL, {
    perMessageDeflate: false,
    localAddress: robot.localAddress,
  });
  robot.socket = socket;
  socket.on('message', (data, isBinary) => {
    if (isBinary) return;
    // A load generator: the server's messages are trusted here, so the fleet spends its CPU on
    // what a robot must do (the signature), not on validating them.
    const message = JSON.parse(data.toString()) as { type: string; nonce: string; heartbeat_ms: number };
    if (message.type === 'challenge') {
      const sig = sign(null, robotChallengePayload(message.nonce, robot.id), robot.key).toString('base64url');
      socket.send(
        JSON.stringify({ type: 'auth', v: 2, robot_id: robot.id, public_key: robot.publicKey, sig }),
      );
    } else if (message.type === 'auth-ok') {
      authenticated++;
      online++;
      robot.online = true;
      done();
      socket.send(ANNOUNCE);
      robot.heartbeat = setInterval(() => socket.send(HEARTBEAT), message.heartbeat_ms);
    }
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    done();
    clearInterval(robot.heartbeat);
    if (robot.online) online--;
    robot.online = false;
    closes++;
    // The storm is started by the parent once the server listens again (`reconnect`), so a fleet
    // that cannot reach the server does not spend the machine's CPU on refused attempts.
    if (reconnecting) setTimeout(() => connect(robot), Math.random() * RECONNECT_JITTER_MS);
    else down.push(robot);
  });
}

function main(): void {
  const robots: Robot[] = [];
  for (let i = first; i < first + count; i++) {
    const j = Math.floor((i - first) / ROBOTS_PER_ADDRESS);
    const localAddress = `${addressPrefix}.${Math.floor(j / 250)}.${(j % 250) + 1}`;
    robots.push({ id: benchRobotId(i), localAddress, ...benchRobotKey(i), online: false });
  }
  process.on('message', (message: { start?: boolean; reconnect?: boolean }) => {
    if (message.start === true) for (const robot of robots) connect(robot);
    if (message.reconnect === true) {
      reconnecting = true;
      for (const robot of down.splice(0))
        setTimeout(() => connect(robot), Math.random() * RECONNECT_JITTER_MS);
    }
  });
  setInterval(
    () => process.send?.({ authenticated, online, closes, connecting, waiting: waiting.length }),
    250,
  );
  process.send?.({ ready: true });
}

main();
