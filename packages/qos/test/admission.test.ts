import { describe, expect, it } from 'vitest';
import { DeltaAdmission, type FrameToAdmit, QOS_PROFILES, qosProfile } from '../src/index.js';

const DELTA: FrameToAdmit = { keyframe: false, bytes: 2000 };
const KEY: FrameToAdmit = { keyframe: true, bytes: 40_000 };

describe('DeltaAdmission thresholds', () => {
  it('drops deltas above backlogFrames frames at the ceiling, per profile', () => {
    // latency: 1 × 1500 kbit/s / 30 fps; balanced: 2 × 3000 / 30; quality: 3 × 6000 / 30.
    const expected = { latency: 6250, balanced: 25_000, quality: 75_000 };
    for (const profile of Object.values(QOS_PROFILES)) {
      const admission = new DeltaAdmission({ profile, fps: 30 });
      expect(admission.thresholdBytes).toBe(expected[profile.name]);
      expect(admission.admit(DELTA, expected[profile.name], 0)).toBe('send');
      expect(admission.admit(DELTA, expected[profile.name] + 1, 1)).toBe('drop');
      expect(admission.waitStarted).toBe(true);
    }
  });

  it('uses the lowered ceiling of max_bitrate_kbps and the channel frame rate', () => {
    const balanced = qosProfile('balanced');
    expect(new DeltaAdmission({ profile: balanced, fps: 30, maxBitrateKbps: 1200 }).thresholdBytes).toBe(
      10_000,
    );
    expect(new DeltaAdmission({ profile: balanced, fps: 15, maxBitrateKbps: 9000 }).thresholdBytes).toBe(
      50_000,
    );
    expect(() => new DeltaAdmission({ profile: balanced, fps: 0 })).toThrow(/fps/);
  });
});

describe('DeltaAdmission waiting for a recovery point', () => {
  const profile = qosProfile('balanced');
  const over = 30_000;

  it('stops deltas after a backlog drop until a keyframe is admitted', () => {
    const a = new DeltaAdmission({ profile, fps: 30 });
    expect(a.admit(DELTA, over, 0)).toBe('drop');
    expect([a.waiting, a.waitStarted]).toEqual([true, true]);
    // The backlog is gone but the deltas would not decode: still dropped, no new wait.
    expect(a.admit(DELTA, 0, 33)).toBe('drop');
    expect(a.waitStarted).toBe(false);
    expect(a.admit(KEY, over, 66)).toBe('send');
    expect(a.waiting).toBe(false);
    expect(a.admit(DELTA, 0, 100)).toBe('send');
    expect(a.stats).toEqual({
      sent: 2,
      backlogDrops: 1,
      waitDrops: 1,
      waitsEndedByKeyframe: 1,
      waitsEndedByGrace: 0,
      keyframesOverThreshold: 1,
    });
  });

  it('resumes deltas when recovery_grace_ms expires without a keyframe', () => {
    const a = new DeltaAdmission({ profile, fps: 30 });
    a.admit(DELTA, over, 1000);
    expect(a.admit(DELTA, 0, 1000 + profile.recoveryGraceMs - 1)).toBe('drop');
    expect(a.admit(DELTA, 0, 1000 + profile.recoveryGraceMs)).toBe('send');
    expect(a.waiting).toBe(false);
    expect(a.stats.waitsEndedByGrace).toBe(1);
    // A backlog still over the threshold at the end of the grace starts a new wait.
    const b = new DeltaAdmission({ profile, fps: 30 });
    b.admit(DELTA, over, 0);
    expect(b.admit(DELTA, over, profile.recoveryGraceMs)).toBe('drop');
    expect(b.waitStarted).toBe(true);
  });

  it('never drops a keyframe, whatever the backlog', () => {
    for (const p of Object.values(QOS_PROFILES)) {
      const a = new DeltaAdmission({ profile: p, fps: 30 });
      a.admit(DELTA, Number.MAX_SAFE_INTEGER, 0);
      for (let t = 1; t < 50; t++) expect(a.admit(KEY, Number.MAX_SAFE_INTEGER, t)).toBe('send');
    }
  });

  it('rejects sizes and clocks it cannot use', () => {
    const a = new DeltaAdmission({ profile, fps: 30 });
    expect(() => a.admit({ keyframe: false, bytes: -1 }, 0, 0)).toThrow(/frame bytes/);
    expect(() => a.admit(DELTA, Number.NaN, 0)).toThrow(/backlogBytes/);
    a.admit(DELTA, 0, 10);
    expect(() => a.admit(DELTA, 0, 9)).toThrow(/went back/);
  });
});
