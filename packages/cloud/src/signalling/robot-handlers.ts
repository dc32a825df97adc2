import { createPublicKey, type KeyObject, verify } from 'node:crypto';
import {
  type RobotAuthMessage,
  robotChallengePayload,
  SIGNAL_CLOSE,
  type SignalCandidate,
  type SignalClientMessage,
} from '@svc/wire';
import { audit } from '../audit/index.js';
import { type CloudDb, robots } from '../db/index.js';
import type { DenialWriter, RobotKeyLoader, RobotKeyRow } from './batching.js';
import type { SignalConnection } from './connection.js';
import type { DriverControl } from './control.js';
import { heartbeatAck, notAllowed, type SignallingHub } from './hub.js';
import { type Announcement, type PilotLink, RobotPresence } from './presence.js';

/** How long a relay allocation outlives its session's move to a direct path, ms. */
export const RELAY_RELEASE_AFTER_MOVE_MS = 2000;
/** Options of {@link RobotHandlers}. */
export interface RobotHandlersOptions {
  readonly db: CloudDb;
  readonly keys: RobotKeyLoader;
  /** `SVC_DEV_OPEN_ENROLMENT=1`: an unknown robot is recorded with its key and no org. */
  readonly devOpenEnrolment: boolean;
  /** Parsed Ed25519 keys kept. */
  readonly keyCacheSize: number;
  /** The driver slot: what the robot reports changes it. */
  readonly control: DriverControl;
  /** Where denials of known robots are remembered (and cleared when the robot proves its key). */
  readonly denials: DenialWriter;
}

/**
 * The robot side of signalling: a robot proves its Ed25519 key by signing the challenge, comes
 * online (replacing an older connection of the same robot), then heartbeats, announces how to
 * reach it and reports its sessions.
 */
export class RobotHandlers {
  readonly #hub: SignallingHub;
  readonly #db: CloudDb;
  readonly #keys: RobotKeyLoader;
  readonly #devOpenEnrolment: boolean;
  readonly #keyCacheSize: number;
  readonly #control: DriverControl;
  readonly #denials: DenialWriter;
  /** Parsed public keys by robot id, with the text they were parsed from; oldest first. */
  readonly #keyCache = new Map<string, { readonly text: string; readonly key: KeyObject }>();

  constructor(hub: SignallingHub, options: RobotHandlersOptions) {
    this.#hub = hub;
    this.#db = options.db;
    this.#keys = options.keys;
    this.#devOpenEnrolment = options.devOpenEnrolment;
    this.#keyCacheSize = options.keyCacheSize;
    this.#control = options.control;
    this.#denials = options.denials;
  }

  /**
   * Checks a robot's `auth`: the signature over the challenge, then the robot's enrolled key. On
   * success the robot is online (`auth-ok`); otherwise it is denied and closed. An answer that
   * comes after the connection closed is dropped.
   *
   * @throws {TypeError} unless `conn` is `challenged`.
   */
  async authenticate(conn: SignalConnection, message: RobotAuthMessage): Promise<void> {
    const nonce = conn.beginAuth('robot');
    const robotId = message.robot_id;
    const key = this.#parseKey(robotId, message.public_key);
    const signature = Buffer.from(message.sig, 'base64url');
    if (
      key === undefined ||
      !(await verifySignature(robotChallengePayload(nonce, robotId), key, signature))
    ) {
      // A robot with this id is told of the denial in its record (an unknown id is nobody's).
      const known = await this.#keys.load(robotId).then(
        (row) => row !== undefined,
        (err: unknown) => {
          this.#hub.log.warn({ err, robotId }, 'cannot look the robot up to remember its denial');
          return false;
        },
      );
      if (conn.isClosed) return;
      this.#hub.log.info({ robotId, reason: 'bad-signature' }, 'robot denied');
      if (known) this.#denials.denied(robotId, 'bad-signature', this.#hub.clock.wallNow());
      conn.deny(
        'bad-signature',
        `the signature does not verify with the public key sent; sign "svc-signal-v2:<nonce>:${robotId}" with the seed at credential_path`,
        SIGNAL_CLOSE.unauthenticated,
      );
      return;
    }
    let row: RobotKeyRow | undefined;
    try {
      row = await this.#keys.load(robotId);
    } catch (err) {
      this.#hub.log.error({ err, robotId }, 'cannot look the robot up');
      conn.close(1011, 'the server cannot reach its database; reconnect with backoff');
      return;
    }
    if (row === undefined && this.#devOpenEnrolment) {
      row = await this.#admitOpen(robotId, message.public_key);
    }
    if (conn.isClosed) return;
    if (row === undefined) {
      this.#hub.log.info({ robotId, reason: 'unknown-robot' }, 'robot denied');
      conn.deny(
        'unknown-robot',
        `robot ${robotId} is not enrolled: redeem an enrolment token (svcd --config <path> enrol --token <T>); an admin creates one in the console (Fleet, Create enrolment token)`,
        SIGNAL_CLOSE.denied,
      );
      return;
    }
    if (!sameKey(row.publicKey, message.public_key)) {
      this.#hub.log.info({ robotId, reason: 'key-mismatch' }, 'robot denied');
      // Queued before the robot hears `denied`, so a flush after it writes the denial.
      this.#denials.denied(robotId, 'key-mismatch', this.#hub.clock.wallNow());
      conn.deny(
        'key-mismatch',
        `robot ${robotId} is enrolled with another key: delete the robot in the console and enrol again`,
        SIGNAL_CLOSE.denied,
      );
      return;
    }
    this.#cacheKey(robotId, message.public_key, key);
    this.#online(conn, row);
  }

  /** A message of an authenticated robot. */
  onMessage(conn: SignalConnection, presence: RobotPresence, message: SignalClientMessage): void {
    switch (message.type) {
      case 'heartbeat':
        heartbeatAck(conn, message.t);
        return;
      case 'announce': {
        const before = presence.announcement;
        presence.announce({
          candidates: message.candidates,
          certHashes: message.cert_hashes,
          channels: message.channels,
          maxSessions: message.max_sessions,
          relay: message.relay,
          driverGraceMs: message.driver_grace_ms ?? 0,
          backends: message.backends ?? ['quic'],
        });
        this.#control.announced(presence, message.sessions);
        if (before !== undefined && !sameAddresses(before, message)) {
          const told = tellPilots(presence, message);
          this.#hub.log.info(
            { robotId: presence.robotId, pilots: told },
            'robot announced new addresses; its pilots were told',
          );
        }
        return;
      }
      case 'session-started':
        this.#control.started(
          presence,
          message.session_id,
          message.role,
          message.sub,
          message.path,
          message.backend,
        );
        return;
      case 'session-path': {
        this.#control.pathChanged(presence, message.session_id, message.path);
        const relay = this.#hub.relay;
        const sessionId = message.session_id;
        // Off the relay: its ports close once what was in flight on them has arrived.
        if (message.path === 'direct' && relay?.has(sessionId) === true) {
          this.#hub.clock.setTimeout(
            () => void relay.release(sessionId, 'the session moved to a direct path'),
            RELAY_RELEASE_AFTER_MOVE_MS,
          );
        }
        return;
      }
      case 'session-ended':
        this.#control.ended(presence, message.session_id, 'ended');
        return;
      case 'rtc-answer':
      case 'rtc-candidate':
      case 'rtc-failed':
        this.#hub.rtc.fromRobot(conn, presence, message);
        return;
      case 'auth':
        notAllowed(conn, 'already authenticated');
        return;
      case 'connect':
      case 'leave':
      case 'request-control':
      case 'answer-control':
      case 'take-control':
      case 'release-control':
      case 'resume':
      case 'relay-allocate':
      case 'renew':
      case 'rtc-offer':
        notAllowed(conn, `"${message.type}" is a pilot message`);
        return;
      default:
        message satisfies never;
    }
  }

  /** The robot was deleted: its parsed key is forgotten. */
  forgetKey(robotId: string): void {
    this.#keyCache.delete(robotId);
  }

  /** Open dev enrolment: records an unknown robot with its key and no org (trust on first use). */
  async #admitOpen(robotId: string, publicKey: string): Promise<RobotKeyRow | undefined> {
    const createdAt = new Date(this.#hub.clock.wallNow());
    const inserted = await this.#db.transaction(async (tx) => {
      const [row] = await tx
        .insert(robots)
        .values({ robotId, orgId: null, publicKey, createdAt })
        .onConflictDoNothing({ target: robots.robotId })
        .returning({
          robotId: robots.robotId,
          orgId: robots.orgId,
          publicKey: robots.publicKey,
          lastDenialAt: robots.lastDenialAt,
        });
      if (row !== undefined) {
        await audit(tx, {
          orgId: null,
          actor: { kind: 'robot', id: robotId },
          action: 'robot.admit',
          targetKind: 'robot',
          targetId: robotId,
          detail: { via: 'SVC_DEV_OPEN_ENROLMENT' },
        });
      }
      return row;
    });
    if (inserted !== undefined) {
      this.#hub.log.warn({ robotId }, 'unknown robot admitted without an org (open dev enrolment)');
      return inserted;
    }
    // Another connection of the same id won the insert: its key is the one kept.
    return this.#keys.load(robotId);
  }

  /** The robot is online on `conn`; an older connection of the same robot is closed (4409). */
  #online(conn: SignalConnection, row: RobotKeyRow): void {
    const hub = this.#hub;
    const wallNow = hub.clock.wallNow();
    const presence = new RobotPresence(row.robotId, row.orgId, conn, wallNow, hub.presenceChanged);
    const previous = hub.robots.get(row.robotId);
    if (previous !== undefined) presence.adopt(previous);
    else {
      // Back after losing the cloud: its sessions, and which pilot holds each, until it announces.
      const parked = hub.parked.get(row.robotId);
      hub.parked.delete(row.robotId);
      if (parked !== undefined) presence.adopt(parked.presence, false);
    }
    // Registered before the older connection closes, so closing it does not take the robot offline.
    hub.robots.set(row.robotId, presence);
    if (
      previous?.connection.close(SIGNAL_CLOSE.replaced, 'replaced by a newer connection of the same robot')
    ) {
      hub.log.info({ robotId: row.robotId }, 'robot connection replaced by a newer one');
    }
    conn.admitRobot(presence);
    presence.lastWrittenAt = wallNow;
    hub.lastSeen.queue(row.robotId, wallNow);
    this.#denials.connected(row.robotId, wallNow, row.lastDenialAt !== null);
    presence.changed();
    conn.send({
      type: 'auth-ok',
      role: 'robot',
      robot_id: row.robotId,
      org_id: row.orgId,
      heartbeat_ms: hub.heartbeatMs,
    });
    hub.log.debug({ robotId: row.robotId }, 'robot online');
  }

  #parseKey(robotId: string, text: string): KeyObject | undefined {
    const cached = this.#keyCache.get(robotId);
    if (cached !== undefined && cached.text === text) return cached.key;
    try {
      return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: text }, format: 'jwk' });
    } catch {
      return undefined;
    }
  }

  #cacheKey(robotId: string, text: string, key: KeyObject): void {
    const cached = this.#keyCache.get(robotId);
    if (cached !== undefined) {
      if (cached.text === text) return;
      this.#keyCache.delete(robotId);
    }
    this.#keyCache.set(robotId, { text, key });
    if (this.#keyCache.size > this.#keyCacheSize) {
      const oldest = this.#keyCache.keys().next();
      if (oldest.done !== true) this.#keyCache.delete(oldest.value);
    }
  }
}

/**
 * Ed25519 verification on libuv's thread pool (the callback form of `crypto.verify`), so a
 * reconnect storm's signatures are checked on every core, not on the event loop alone.
 */
function verifySignature(payload: Uint8Array, key: KeyObject, signature: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    verify(null, payload, key, signature, (err, ok) => resolve(err === null && ok));
  });
}

/** Whether two base64url keys are the same bytes (a stored key may carry padding). */
function sameKey(stored: string, presented: string): boolean {
  if (stored === presented) return true;
  return Buffer.from(stored, 'base64url').equals(Buffer.from(presented, 'base64url'));
}

/** Whether an announce names the same candidates and certificates as the announcement before. */
function sameAddresses(
  before: Announcement,
  message: { readonly candidates: readonly SignalCandidate[]; readonly cert_hashes: readonly string[] },
): boolean {
  return (
    JSON.stringify(before.candidates) === JSON.stringify(message.candidates) &&
    JSON.stringify(before.certHashes) === JSON.stringify(message.cert_hashes)
  );
}

/** Every pilot of the robot's sessions hears its new addresses (`candidates`), once per connection. */
function tellPilots(
  presence: RobotPresence,
  message: { readonly candidates: readonly SignalCandidate[]; readonly cert_hashes: readonly string[] },
): number {
  const pilots = new Set<PilotLink>();
  for (const record of presence.sessions()) if (record.pilot !== undefined) pilots.add(record.pilot);
  for (const pilot of pilots) {
    pilot.send({
      type: 'candidates',
      robot_id: presence.robotId,
      candidates: [...message.candidates],
      cert_hashes: [...message.cert_hashes],
    });
  }
  return pilots.size;
}
