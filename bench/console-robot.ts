/**
 * One simulated robot of the `console` suite, in the bench process, timed: it opens the signalling
 * WebSocket, answers the challenge with its Ed25519 key (signalling v2, the key seeded from its
 * index as in `workers/fleet-keys.ts`), announces itself and heartbeats, and says when its connect
 * began and when the server answered `auth-ok`, on the bench process's `Date.now()` clock (the
 * pages on the same machine record theirs on the same clock).
 */
import { sign } from 'node:crypto';
import { encodeSignalMessage, robotChallengePayload, SIGNAL_SUBPROTOCOL } from '@svc/wire';
import WebSocket from 'ws';
import { benchRobotId, benchRobotKey } from './workers/fleet-keys.js';

/** What one robot's connect took, ms since the epoch. */
export interface RobotConnectTimes {
  readonly robotId: string;
  /** `Date.now()` just before the WebSocket was created. */
  readonly startedAt: number;
  /** `Date.now()` when `auth-ok` arrived. */
  readonly authOkAt: number;
}

/** A connected robot; `close()` ends its connection. */
export interface TimedRobot {
  readonly times: RobotConnectTimes;
  close(): void;
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

/**
 * Connects robot `index` to `url` (`ws://…/ws`); resolves once it is authenticated and has sent its
 * announce, rejects when the connection closes first or takes longer than `timeoutMs`.
 * The key is derived before the clock starts: a real robot holds its key already.
 */
export function connectTimedRobot(url: string, index: number, timeoutMs = 30_000): Promise<TimedRobot> {
  const robotId = benchRobotId(index);
  const { key, publicKey } = benchRobotKey(index);
  return new Promise((resolve, reject) => {
    const startedAt = Date.now();
    const socket = new WebSocket(url, SIGNAL_SUBPROTOCOL, { perMessageDeflate: false });
    let heartbeat: ReturnType<typeof setInterval> | undefined;
    let settled = false;
    const timer = setTimeout(
      () => fail(new Error(`robot ${robotId}: no auth-ok within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.terminate();
      reject(err);
    };
    socket.on('message', (data, isBinary) => {
      if (isBinary) return;
      // A load generator: the server's messages are trusted here (the signalling bench does the same).
      const message = JSON.parse(data.toString()) as { type: string; nonce?: string; heartbeat_ms?: number };
      if (message.type === 'challenge' && message.nonce !== undefined) {
        const sig = sign(null, robotChallengePayload(message.nonce, robotId), key).toString('base64url');
        socket.send(JSON.stringify({ type: 'auth', v: 2, robot_id: robotId, public_key: publicKey, sig }));
      } else if (message.type === 'auth-ok' && !settled) {
        const authOkAt = Date.now();
        settled = true;
        clearTimeout(timer);
        socket.send(ANNOUNCE);
        heartbeat = setInterval(() => socket.send(HEARTBEAT), message.heartbeat_ms ?? 15_000);
        resolve({
          times: { robotId, startedAt, authOkAt },
          close: () => {
            clearInterval(heartbeat);
            socket.close();
          },
        });
      }
    });
    socket.on('error', (err) => fail(err));
    socket.on('close', (code, reason) => {
      clearInterval(heartbeat);
      fail(new Error(`robot ${robotId}: connection closed (${code} ${reason.toString()}) before auth-ok`));
    });
  });
}
