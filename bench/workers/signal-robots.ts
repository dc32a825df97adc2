/**
 * A fleet of simulated robots for the signalling benchmark, run as a child process: each robot
 * opens a WebSocket to `/ws`, answers the challenge with its Ed25519 key (seeded from its index, so
 * the parent knows the public keys it enrolled), announces itself, heartbeats, and reconnects after a
 * close with the daemon's first backoff step (full jitter up to 500 ms).
 *
 * Messages from the parent: `{ start: true }`. To the parent: `{ authenticated, online, closes }`
 * every 250 ms.
 */
import { type KeyObject, sign } from 'node:crypto';
import {
  encodeSignalMessage,
  parseSignalServerMessage,
  robotChallengePayload,
  SIGNAL_SUBPROTOCOL,
  WireError,
} from '@svc/wire';
import WebSocket from 'ws';
import { benchRobotId, benchRobotKey } from './fleet-keys.js';

const [url, firstArg, countArg, localAddress] = process.argv.slice(2);
const first = Number(firstArg);
const count = Number(countArg);
/** Handshakes in flight at once, like robots that do not all boot in the same millisecond. */
const MAX_CONNECTING = 500;
const RECONNECT_JITTER_MS = 500;

interface Robot {
  readonly id: string;
  readonly key: KeyObject;
  readonly publicKey: string;
  socket?: WebSocket;
  online: boolean;
  heartbeat?: ReturnType<typeof setInterval>;
}

let authenticated = 0;
let online = 0;
let closes = 0;
let connecting = 0;
const waiting: Robot[] = [];

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
    ...(localAddress !== undefined && localAddress !== '' && { localAddress }),
  });
  robot.socket = socket;
  socket.on('message', (data, isBinary) => {
    if (isBinary) return;
    const message = parseSignalServerMessage(data.toString());
    if (message instanceof WireError) return;
    if (message.type === 'challenge') {
      const sig = sign(null, robotChallengePayload(message.nonce, robot.id), robot.key).toString('base64url');
      socket.send(
        encodeSignalMessage({ type: 'auth', v: 2, robot_id: robot.id, public_key: robot.publicKey, sig }),
      );
    } else if (message.type === 'auth-ok') {
      authenticated++;
      online++;
      robot.online = true;
      done();
      socket.send(
        encodeSignalMessage({
          type: 'announce',
          candidates: [{ address: '192.0.2.1', port: 4433, family: 'ipv4', kind: 'host' }],
          cert_hashes: ['ab'.repeat(32)],
          channels: [{ id: 1, name: 'front', kind: 'video', codec: 'avc1.42e01f' }],
          max_sessions: 4,
          relay: false,
          sessions: [],
        }),
      );
      robot.heartbeat = setInterval(
        () => socket.send(encodeSignalMessage({ type: 'heartbeat' })),
        message.heartbeat_ms,
      );
    }
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    done();
    clearInterval(robot.heartbeat);
    if (robot.online) online--;
    robot.online = false;
    closes++;
    setTimeout(() => connect(robot), Math.random() * RECONNECT_JITTER_MS);
  });
}

function main(): void {
  const robots: Robot[] = [];
  for (let i = first; i < first + count; i++) {
    robots.push({ id: benchRobotId(i), ...benchRobotKey(i), online: false });
  }
  process.on('message', (message: { start?: boolean }) => {
    if (message.start === true) for (const robot of robots) connect(robot);
  });
  setInterval(() => process.send?.({ authenticated, online, closes }), 250);
  process.send?.({ ready: true });
}

main();
