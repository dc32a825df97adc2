import { WireError } from './errors.js';
import { QOS_PROFILE_NAMES } from './qos-profile.js';
import { z } from './zod.js';

/**
 * Why a robot denied a session (`denied`'s `code`):
 * - `token-refused`: the pilot session token does not verify, has expired, or is for another robot;
 * - `token-revoked`: the token was revoked;
 * - `token-in-use`: another session holds this token (one session per token);
 * - `session-in-use`: the signalling session id is taken;
 * - `busy`: the robot has as many sessions as it takes;
 * - `check-failed`: the robot could not check the token (try again).
 */
export const DENIED_CODES = [
  'token-refused',
  'token-revoked',
  'token-in-use',
  'session-in-use',
  'busy',
  'check-failed',
] as const;

/** One of {@link DENIED_CODES}. */
export type DeniedCode = (typeof DENIED_CODES)[number];

/**
 * Control-stream messages: one JSON object per line (`\n`), each with a `type`, on the first
 * bidirectional stream of a session. The contract is `docs/protocol/control.md`.
 */
const channel = z.object({
  id: z.number().int().min(1).max(255),
  name: z.string().max(128),
  kind: z.enum(['video', 'sensor', 'command']),
  codec: z.string().max(128),
});

/** A channel as the robot announces it in `welcome`. */
export type ControlChannel = z.infer<typeof channel>;

const role = z.enum(['driver', 'observer']);

/** A session's role: a `driver` may send commands, an `observer`'s commands are dropped. */
export type ControlRole = z.infer<typeof role>;

const qosProfile = z.enum(QOS_PROFILE_NAMES);

const catchUp = z
  .object({
    channel: z.number().int().min(1).max(255),
    last_frame: z.number().int().min(0).max(0xffff),
    frames: z.number().int().min(1).max(0xffff),
    live: z.boolean(),
  })
  .strict();

/**
 * What the robot replays to a joining session on one video channel (in `welcome`): the frames up
 * to `last_frame` are the latest keyframe and, when `live`, every frame after it, sent at once so
 * the pilot decodes through them and paints `last_frame`, the current picture. Without `live` only
 * the keyframe comes (the frames after it exceeded the replay bound): a picture to show, marked as
 * not live until the next keyframe.
 */
export type ControlCatchUp = z.infer<typeof catchUp>;

const sourceState = z.enum(['live', 'no-data', 'offline']);

/**
 * What the robot knows of a video channel's source (the `source` message): `live` frames arrive;
 * `no-data` the source is reachable (or listened for) but sends no frames; `offline` the daemon
 * cannot read it at all (RTSP unreachable, refused, gone).
 */
export type ControlSourceState = z.infer<typeof sourceState>;

const messages = [
  z
    .object({
      type: z.literal('hello'),
      v: z.literal(1),
      token: z.string().max(8192),
      session_id: z.string().min(1).max(128).optional(),
      /**
       * `true`: this transport is a new path for the open session `session_id` (the pilot moves
       * off the relay): the robot moves the session here and answers `moved`, not `welcome`.
       */
      move: z.boolean().optional(),
    })
    .strict(),
  /** The session now runs on the transport that sent `hello {move: true}`; `path` is how. */
  z.object({ type: z.literal('moved'), path: z.enum(['direct', 'relay']) }).strict(),
  /**
   * The pilot's fresh pilot session token for its session (sent before the old one expires): the
   * robot checks it as at `hello` (same person, the same robot) and keeps the session to its expiry.
   */
  z.object({ type: z.literal('renew'), token: z.string().max(8192) }).strict(),
  /** The robot accepted a `renew`: the session lives until `exp` (seconds since the epoch). */
  z.object({ type: z.literal('renewed'), exp: z.number().int() }).strict(),
  z
    .object({
      type: z.literal('welcome'),
      session_id: z.string().max(128),
      role,
      channels: z.array(channel).max(255),
      qos: z
        .object({ profile: qosProfile, presentation_delay_ms: z.number().int().min(0).max(10_000) })
        .strict(),
      catch_up: z.array(catchUp).max(255).optional(),
      heartbeat_ms: z.number().int().min(50).max(10_000).optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('denied'),
      reason: z.string().max(256),
      /** Why, as a stable code (`DENIED_CODES`); absent from robots that predate it. */
      code: z.enum(DENIED_CODES).optional(),
    })
    .strict(),
  z.object({ type: z.literal('ping'), t: z.number() }).strict(),
  z
    .object({ type: z.literal('heartbeat'), seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER) })
    .strict(),
  z.object({ type: z.literal('pong'), t: z.number(), robot_time: z.number() }).strict(),
  z.object({ type: z.literal('request-keyframe'), channel: z.number().int().min(1).max(255) }).strict(),
  z
    .object({
      type: z.literal('loss'),
      channel: z.number().int().min(1).max(255),
      chunk_loss: z.number().min(0).max(1),
      frames_lost: z.number().int().min(0),
    })
    .strict(),
  z.object({ type: z.literal('set-qos'), profile: qosProfile }).strict(),
  z
    .object({
      type: z.literal('qos'),
      profile: qosProfile,
      presentation_delay_ms: z.number().int().min(0).max(10_000),
    })
    .strict(),
  z
    .object({
      type: z.literal('agent-stats'),
      channels: z.record(z.string(), z.record(z.string(), z.union([z.number(), z.string().max(64)]))),
    })
    .strict(),
  z
    .object({
      type: z.literal('pilot-stats'),
      channels: z.record(z.string(), z.record(z.string(), z.number())),
    })
    .strict(),
  z
    .object({
      type: z.literal('source'),
      channel: z.number().int().min(1).max(255),
      state: sourceState,
      reason: z.string().max(512).optional(),
    })
    .strict(),
  z.object({ type: z.literal('role'), role, reason: z.string().max(256).optional() }).strict(),
  z.object({ type: z.literal('bye'), reason: z.string().max(256).optional() }).strict(),
] as const;

const controlMessage = z.discriminatedUnion('type', messages);

/** Any control-stream message. */
export type ControlMessage = z.infer<typeof controlMessage>;

/** Longest control line accepted (bytes, newline excluded). */
export const MAX_CONTROL_LINE_BYTES = 64 * 1024;

const encoder = new TextEncoder();

/** One message as a line of UTF-8 JSON. Throws `TypeError` for a message that breaks the schema. */
export function encodeControlMessage(message: ControlMessage): Uint8Array {
  const checked = controlMessage.safeParse(message);
  if (!checked.success)
    throw new TypeError(`invalid control message: ${checked.error.issues[0]?.message ?? ''}`);
  return encoder.encode(`${JSON.stringify(message)}\n`);
}

/**
 * Splits control-stream bytes into messages. `push` returns the messages completed by a chunk; a
 * line that is not JSON, breaks the schema or is too long is reported as a {@link WireError}
 * (`control-message`) in the result, without stopping the stream.
 */
export class ControlLineReader {
  readonly #decoder = new TextDecoder('utf-8', { fatal: false });
  #partial = '';
  #partialBytes = 0;
  #discarding = false;

  /** Takes the next bytes of the stream. */
  push(bytes: Uint8Array): (ControlMessage | WireError)[] {
    const out: (ControlMessage | WireError)[] = [];
    let start = 0;
    for (let nl = bytes.indexOf(0x0a); nl >= 0; nl = bytes.indexOf(0x0a, start)) {
      this.#append(bytes.subarray(start, nl), out);
      if (!this.#discarding) out.push(parseLine(this.#partial));
      this.#partial = '';
      this.#partialBytes = 0;
      this.#discarding = false;
      start = nl + 1;
    }
    this.#append(bytes.subarray(start), out);
    return out;
  }

  #append(bytes: Uint8Array, out: (ControlMessage | WireError)[]): void {
    if (this.#discarding || bytes.byteLength === 0) return;
    this.#partialBytes += bytes.byteLength;
    if (this.#partialBytes > MAX_CONTROL_LINE_BYTES) {
      this.#discarding = true;
      this.#partial = '';
      out.push(
        new WireError('control-message', `control line longer than ${MAX_CONTROL_LINE_BYTES} bytes; skipped`),
      );
      return;
    }
    this.#partial += this.#decoder.decode(bytes, { stream: true });
  }
}

function parseLine(line: string): ControlMessage | WireError {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return new WireError('control-message', `control line is not JSON: ${JSON.stringify(line.slice(0, 80))}`);
  }
  const checked = controlMessage.safeParse(value);
  if (checked.success) return checked.data;
  const issue = checked.error.issues[0];
  const type =
    typeof value === 'object' && value !== null ? String((value as { type?: unknown }).type) : typeof value;
  return new WireError(
    'control-message',
    `control message "${type}" rejected at ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`,
  );
}
