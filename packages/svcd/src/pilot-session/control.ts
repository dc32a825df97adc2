/**
 * The robot's control-stream messages that take more than a line to build: `welcome` with every
 * channel and the replay each video channel makes at join, and the reasons of `denied`/`bye`.
 */
import type { QosProfile } from '@svc/qos';
import type { ControlCatchUp, ControlChannel, ControlMessage, DeniedCode } from '@svc/wire';
import type { CommandChannel } from '../command-channel.js';
import type { SensorChannel } from '../sensor-channel.js';
import type { OpenSession } from '../session-registry.js';
import type { CatchUp, VideoChannel } from '../video-channel.js';

/** Longest `denied`/`bye` reason the control schema takes. */
export const MAX_REASON_CHARS = 256;

/** `bye` with a reason cut to what the schema takes. */
export function endMessage(type: 'bye', reason: string): ControlMessage;
/** `denied` with a reason cut to what the schema takes and its stable code. */
export function endMessage(type: 'denied', reason: string, code: DeniedCode): ControlMessage;
export function endMessage(type: 'denied' | 'bye', reason: string, code?: DeniedCode): ControlMessage {
  const cut = reason.slice(0, MAX_REASON_CHARS);
  return type === 'denied' ? { type, reason: cut, code: code! } : { type, reason: cut };
}

/** One video channel and what it replays to a joining session. */
export interface Replay {
  readonly channel: VideoChannel;
  readonly catchUp: CatchUp | undefined;
}

/** A session's `welcome` and the replays it names. */
export interface Welcome {
  readonly message: ControlMessage;
  readonly replays: readonly Replay[];
}

/**
 * The `welcome` of `open`: every channel of the robot by id, the profile in force, what each
 * video channel replays, and the heartbeat period. The replays are taken now, with `welcome`, so
 * the frames named there are exactly those the session queues next, before any live frame.
 */
export function welcomeFor(
  open: OpenSession,
  profile: QosProfile,
  video: readonly VideoChannel[],
  sensors: readonly SensorChannel[],
  commands: readonly CommandChannel[],
  heartbeatMs: number,
): Welcome {
  const channels: ControlChannel[] = [...video, ...sensors, ...commands]
    .map(({ config }) => ({ id: config.id, name: config.name, kind: config.kind, codec: config.codec }))
    .sort((a, b) => a.id - b.id);
  const replays = video.map((channel) => ({ channel, catchUp: channel.catchUp() }));
  const catchUp: ControlCatchUp[] = replays.flatMap(({ channel, catchUp }) =>
    catchUp === undefined
      ? []
      : [
          {
            channel: channel.config.id,
            last_frame: catchUp.lastFrameId,
            frames: catchUp.frames.length,
            live: catchUp.live,
          },
        ],
  );
  return {
    message: {
      type: 'welcome',
      session_id: open.sessionId,
      role: open.role,
      channels,
      qos: { profile: profile.name, presentation_delay_ms: profile.presentationDelayMs },
      ...(catchUp.length > 0 && { catch_up: catchUp }),
      heartbeat_ms: heartbeatMs,
    },
    replays,
  };
}
