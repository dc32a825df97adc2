import { parityCountFor } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { DEFAULT_QOS_PROFILE, QOS_PROFILE_NAMES, QOS_PROFILES, qosProfile } from '../src/index.js';

describe('QoS profiles', () => {
  it('carry the architecture page numbers', () => {
    expect(
      Object.values(QOS_PROFILES).map((p) => [p.name, p.ceilingKbps, p.maxGopMs, p.presentationDelayMs]),
    ).toEqual([
      ['latency', 1500, 10_000, 50],
      ['balanced', 3000, 10_000, 100],
      ['quality', 6000, 4000, 150],
    ]);
  });

  it('exist for every name the control messages carry, in the same order, balanced by default', () => {
    expect(Object.keys(QOS_PROFILES)).toEqual([...QOS_PROFILE_NAMES]);
    for (const name of QOS_PROFILE_NAMES) expect(qosProfile(name).name).toBe(name);
    expect(DEFAULT_QOS_PROFILE).toBe('balanced');
  });

  it('give small frames three parity chunks and large ones the profile rate', () => {
    const balanced = qosProfile('balanced');
    expect(parityCountFor(2, balanced.parity.delta)).toBe(3);
    expect(parityCountFor(40, balanced.parity.delta)).toBe(6);
    expect(parityCountFor(40, balanced.parity.key)).toBe(12);
  });
});

describe('qosProfile', () => {
  it('names the valid profiles when given another name', () => {
    expect(() => qosProfile('fast' as never)).toThrow(
      'unknown QoS profile "fast": expected one of latency, balanced, quality',
    );
    expect(() => qosProfile('toString' as never)).toThrow(/unknown QoS profile/);
  });
});
