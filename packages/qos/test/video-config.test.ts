import { decodePublisherControl, encodePublisherControl } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { AbrController, QOS_PROFILES, qosProfile, videoConfigFor } from '../src/index.js';

describe('videoConfigFor', () => {
  it('builds the start video-config of every profile, as the wire encoder accepts it', () => {
    const gop = { latency: 10_000, balanced: 10_000, quality: 4000 };
    for (const profile of Object.values(QOS_PROFILES)) {
      const abr = new AbrController({ profile, fps: 30 });
      const message = videoConfigFor({ channel: 3, profile, decision: abr.decision, reason: 'profile' });
      expect(message).toEqual({
        type: 'video-config',
        channel: 3,
        profile: profile.name,
        maxBitrateKbps: abr.decision.bitrateKbps,
        latencyBudgetMs: profile.latencyBudgetMs,
        maxGopMs: gop[profile.name],
        preferIntraRefresh: true,
        suggestedFps: 0,
        reason: 'profile',
      });
      expect(decodePublisherControl(encodePublisherControl(message))).toEqual(message);
    }
  });

  it('carries a controller move: the lower request, and the frame rate at the floor', () => {
    const profile = qosProfile('latency');
    const abr = new AbrController({ profile, fps: 30, maxBitrateKbps: 1000 });
    const queued = {
      smoothedRttMs: 500,
      minRttMs: 40,
      deliveryRateKbps: 0,
      packetsSent: 100,
      packetsLost: 0,
      backlogDrops: 1,
      pilotChunkLoss: 0,
      unrecoveredFrames: 0,
    };
    const sent = [];
    for (let t = 0; t < 10_000; t += 1000) {
      const d = abr.handleTick(t, queued);
      if (d.move !== null) sent.push(videoConfigFor({ channel: 1, profile, decision: d, reason: d.move }));
    }
    expect(sent.length).toBeGreaterThan(1);
    expect(sent.every((m) => m.reason === 'abr-down' && m.maxBitrateKbps <= 1000)).toBe(true);
    expect(sent.at(-1)).toMatchObject({ maxBitrateKbps: 250, suggestedFps: 15 });
  });

  it('refuses a request outside the range, a bad channel or reason', () => {
    const profile = qosProfile('balanced');
    const decision = { bitrateKbps: 3001, ceilingKbps: 3000, floorKbps: 750, suggestedFps: 0 };
    expect(() => videoConfigFor({ channel: 1, profile, decision, reason: 'abr-up' })).toThrow(/ceiling 3000/);
    const ok = { ...decision, bitrateKbps: 2000 };
    expect(() => videoConfigFor({ channel: 0, profile, decision: ok, reason: 'abr-up' })).toThrow(/channel/);
    expect(() => videoConfigFor({ channel: 1, profile, decision: ok, reason: 'later' as never })).toThrow(
      /reason/,
    );
  });
});
