import { type ParityPolicy, QOS_PROFILE_NAMES, type QosProfileName } from '@svc/wire';

// The names travel in control messages, so `@svc/wire` declares them; this module declares every
// number of every profile. Both are part of this package's surface: import them from here.
export { QOS_PROFILE_NAMES, type QosProfileName };

/** The profile a robot uses when its configuration names none. */
export const DEFAULT_QOS_PROFILE = 'balanced' satisfies QosProfileName;

/** One profile's numbers (architecture page, "QoS profiles"). */
export interface QosProfile {
  readonly name: QosProfileName;
  /** Bitrate ceiling; the floor is a quarter of it. */
  readonly ceilingKbps: number;
  readonly latencyBudgetMs: number;
  readonly maxGopMs: number;
  readonly preferIntraRefresh: boolean;
  /** Parity on a clean link: delta frames and keyframes. */
  readonly parity: { readonly delta: ParityPolicy; readonly key: ParityPolicy };
  /** Backlog above which delta frames are dropped, in frames at the ceiling bitrate. */
  readonly backlogFrames: number;
  readonly recoveryGraceMs: number;
  /** How long the pilot holds a frame before painting it. */
  readonly presentationDelayMs: number;
  /** What the pilot does after a loss it cannot repair. */
  readonly onUnrecoverableLoss: 'continue' | 'freeze';
}

/**
 * Minimum parity chunks per block for every profile: what lets small frames survive a burst of
 * three losses (docs/adr/0003-parity-floor.md).
 */
export const PARITY_FLOOR = 3;

const parity = (deltaPct: number, keyPct: number) => ({
  delta: { rate: deltaPct / 100, minPerBlock: PARITY_FLOOR },
  key: { rate: keyPct / 100, minPerBlock: PARITY_FLOOR },
});

/** The three profiles, by name ({@link DEFAULT_QOS_PROFILE} is the default). */
export const QOS_PROFILES: Readonly<Record<QosProfileName, QosProfile>> = Object.freeze({
  latency: {
    name: 'latency',
    ceilingKbps: 1500,
    latencyBudgetMs: 100,
    maxGopMs: 10_000,
    preferIntraRefresh: true,
    parity: parity(25, 50),
    backlogFrames: 1,
    recoveryGraceMs: 700,
    presentationDelayMs: 50,
    onUnrecoverableLoss: 'continue',
  },
  balanced: {
    name: 'balanced',
    ceilingKbps: 3000,
    latencyBudgetMs: 100,
    maxGopMs: 10_000,
    preferIntraRefresh: true,
    parity: parity(15, 30),
    backlogFrames: 2,
    recoveryGraceMs: 900,
    presentationDelayMs: 100,
    onUnrecoverableLoss: 'continue',
  },
  quality: {
    name: 'quality',
    ceilingKbps: 6000,
    latencyBudgetMs: 200,
    maxGopMs: 4000,
    preferIntraRefresh: true,
    parity: parity(8, 15),
    backlogFrames: 3,
    recoveryGraceMs: 1400,
    presentationDelayMs: 150,
    onUnrecoverableLoss: 'freeze',
  },
});

/**
 * The profile called `name`.
 *
 * @throws TypeError naming the valid names, for any other value
 */
export function qosProfile(name: QosProfileName): QosProfile {
  const profile = Object.hasOwn(QOS_PROFILES, name) ? QOS_PROFILES[name] : undefined;
  if (profile === undefined) {
    throw new TypeError(`unknown QoS profile "${name}": expected one of ${QOS_PROFILE_NAMES.join(', ')}`);
  }
  return profile;
}
