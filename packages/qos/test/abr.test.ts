import { FramePacker, type ParityPolicy } from '@svc/wire';
import { seededRandom } from '@svc/wire/sim';
import { describe, expect, it } from 'vitest';
import {
  ABR_REASONS,
  ABR_TUNING,
  AbrController,
  type AbrDecision,
  type AbrSample,
  abrAgentStats,
  channelBitrateRange,
  PARITY_FLOOR,
  parityBytesPerFrame,
  parityKbpsFor,
  QOS_PROFILES,
  type QosProfile,
  type QosProfileName,
  qosProfile,
} from '../src/index.js';

const CLEAN: AbrSample = {
  smoothedRttMs: 40,
  minRttMs: 40,
  deliveryRateKbps: 0,
  packetsSent: 300,
  packetsLost: 0,
  backlogDrops: 0,
  pilotChunkLoss: 0,
  unrecoveredFrames: 0,
};
/** Queueing delay far above every profile's limit. */
const QUEUED: AbrSample = { ...CLEAN, smoothedRttMs: 400 };

/** Feeds one sample a second; returns every decision. */
function run(abr: AbrController, from: number, samples: readonly AbrSample[]): AbrDecision[] {
  return samples.map((sample, i) => abr.handleTick(from + i * 1000, sample));
}

function repeat(sample: AbrSample, n: number): AbrSample[] {
  return Array.from({ length: n }, () => sample);
}

const total = (d: AbrDecision) => d.bitrateKbps + d.parityKbps;

describe('AbrController range', () => {
  it('works between the profile ceiling and a quarter of it without max_bitrate_kbps', () => {
    for (const profile of Object.values(QOS_PROFILES)) {
      for (const maxBitrateKbps of [undefined, 0]) {
        const abr = new AbrController({
          profile,
          fps: 30,
          ...(maxBitrateKbps !== undefined && { maxBitrateKbps }),
        });
        expect([abr.decision.ceilingKbps, abr.decision.floorKbps]).toEqual([
          profile.ceilingKbps,
          profile.ceilingKbps / 4,
        ]);
        expect(abr.decision.bitrateKbps).toBeLessThanOrEqual(profile.ceilingKbps);
      }
    }
  });

  it('lowers ceiling and floor to a lower max_bitrate_kbps, and ignores a higher one', () => {
    const balanced = qosProfile('balanced');
    expect(channelBitrateRange(balanced, 2000)).toEqual({ ceilingKbps: 2000, floorKbps: 500 });
    expect(channelBitrateRange(balanced, 1001)).toEqual({ ceilingKbps: 1001, floorKbps: 251 });
    expect(channelBitrateRange(balanced, 5000)).toEqual({ ceilingKbps: 3000, floorKbps: 750 });
    expect(channelBitrateRange(balanced, 3000)).toEqual({ ceilingKbps: 3000, floorKbps: 750 });
    expect(() => channelBitrateRange(balanced, -1)).toThrow(/max_bitrate_kbps/);

    const capped = new AbrController({ profile: balanced, fps: 30, maxBitrateKbps: 2000 });
    const uncapped = new AbrController({ profile: balanced, fps: 30, maxBitrateKbps: 5000 });
    const plain = new AbrController({ profile: balanced, fps: 30 });
    expect(uncapped.decision).toEqual(plain.decision);
    expect(total(capped.decision)).toBeLessThanOrEqual(2000);

    // Long congestion and a long clean link: the request stays inside [500, 2000].
    const decisions = run(capped, 0, [...repeat(QUEUED, 30), ...repeat(CLEAN, 120)]);
    expect(Math.min(...decisions.map((d) => d.bitrateKbps))).toBe(500);
    expect(Math.max(...decisions.map((d) => d.bitrateKbps))).toBeLessThanOrEqual(2000);
    expect(decisions.at(-1)!.bitrateKbps).toBe(capped.decision.bitrateKbps);
  });

  it('never requests more than the ceiling nor less than the floor on any profile', () => {
    for (const profile of Object.values(QOS_PROFILES)) {
      const abr = new AbrController({ profile, fps: 30 });
      const decisions = run(abr, 0, [...repeat({ ...QUEUED, backlogDrops: 3 }, 20), ...repeat(CLEAN, 90)]);
      const rates = decisions.map((d) => d.bitrateKbps);
      expect(Math.min(...rates)).toBe(profile.ceilingKbps / 4);
      expect(Math.max(...rates)).toBeLessThanOrEqual(profile.ceilingKbps);
      // Back to where a clean link starts.
      expect(rates.at(-1)).toBe(new AbrController({ profile, fps: 30 }).decision.bitrateKbps);
    }
  });

  it('rejects a frame rate or a sample it cannot use, naming it', () => {
    const profile = qosProfile('balanced');
    expect(() => new AbrController({ profile, fps: 0 })).toThrow(/fps/);
    const abr = new AbrController({ profile, fps: 30 });
    expect(() => abr.handleTick(0, { ...CLEAN, smoothedRttMs: Number.NaN })).toThrow(/smoothedRttMs/);
    expect(() => abr.handleTick(0, { ...CLEAN, packetsLost: -1 })).toThrow(/packetsLost/);
    expect(() => abr.handleTick(0, { ...CLEAN, pilotChunkLoss: 1.5 })).toThrow(/pilotChunkLoss/);
    abr.handleTick(1000, CLEAN);
    expect(() => abr.handleTick(999, CLEAN)).toThrow(/went back/);
  });
});

describe('AbrController steps', () => {
  it('steps down at once on queueing delay, harder on backlog drops, and says why', () => {
    const profile = qosProfile('balanced');
    const latency = new AbrController({ profile, fps: 30 });
    const backlog = new AbrController({ profile, fps: 30 });
    const start = latency.decision;
    const l = latency.handleTick(0, QUEUED);
    const b = backlog.handleTick(0, { ...CLEAN, backlogDrops: 2 });
    expect([l.reason, l.move, b.reason, b.move]).toEqual(['latency', 'abr-down', 'backlog', 'abr-down']);
    expect(total(l)).toBeLessThanOrEqual(total(start) * ABR_TUNING.latencyFactor);
    expect(total(b)).toBeLessThanOrEqual(total(start) * ABR_TUNING.backlogFactor);
    expect(b.bitrateKbps).toBeLessThan(l.bitrateKbps);
  });

  it('treats RTT near the minimum as clean, and learns the minimum when none is given', () => {
    const profile = qosProfile('balanced');
    const abr = new AbrController({ profile, fps: 30 });
    const { minRttMs: _given, ...withoutMin } = CLEAN;
    // A long path (200 ms) is not queueing; 100 ms more than its minimum is.
    expect(run(abr, 0, repeat({ ...withoutMin, smoothedRttMs: 200 }, 3)).map((d) => d.move)).toEqual([
      null,
      null,
      null,
    ]);
    expect(abr.handleTick(3000, { ...withoutMin, smoothedRttMs: 320 }).reason).toBe('latency');
  });

  it('holds the total to the delivery rate the congested path achieved', () => {
    const abr = new AbrController({ profile: qosProfile('quality'), fps: 30 });
    const start = total(abr.decision);
    const d = abr.handleTick(0, { ...QUEUED, deliveryRateKbps: 4000 });
    expect(total(d)).toBeLessThanOrEqual(4000 * ABR_TUNING.deliveryShare);
    expect(total(d)).toBeGreaterThanOrEqual(start * ABR_TUNING.maxCut);
  });

  it('steps down on heavy loss, and only covers light loss with parity', () => {
    const abr = new AbrController({ profile: qosProfile('quality'), fps: 30 });
    const start = abr.decision;
    const light = abr.handleTick(0, { ...CLEAN, pilotChunkLoss: 0.05 });
    // 5 % loss: parity up to 20 % of deltas, video down by what parity took, the total kept.
    expect(light.parity.delta).toEqual({ rate: 0.2, minPerBlock: PARITY_FLOOR });
    expect(light.parity.key.rate).toBeGreaterThan(start.parity.key.rate);
    expect([light.reason, light.move]).toEqual(['loss', 'abr-down']);
    expect(light.bitrateKbps).toBeLessThan(start.bitrateKbps);
    expect(total(light)).toBeGreaterThan(total(start) * 0.97);
    const steady = run(abr, 1000, repeat({ ...CLEAN, pilotChunkLoss: 0.05 }, 10));
    expect(steady.every((d) => d.move === null && d.reason === 'loss')).toBe(true);

    const heavy = abr.handleTick(11_000, { ...CLEAN, packetsSent: 100, packetsLost: 30 });
    expect([heavy.reason, heavy.move]).toEqual(['loss', 'abr-down']);
    expect(total(heavy)).toBeLessThanOrEqual(total(light) * (1 - 0.3 / 2) + 1);
  });

  it('raises the parity floor when the pilot still loses frames (residual), lowering the video', () => {
    const abr = new AbrController({ profile: qosProfile('balanced'), fps: 30 });
    const start = abr.decision;
    const d = abr.handleTick(0, { ...CLEAN, pilotChunkLoss: 0.05, unrecoveredFrames: 3 });
    expect(d.reason).toBe('residual');
    expect(d.parity.delta.minPerBlock).toBe(PARITY_FLOOR + 1);
    expect(d.parity.key.minPerBlock).toBe(PARITY_FLOOR + 1);
    expect(d.bitrateKbps).toBeLessThan(start.bitrateKbps);
    expect(d.move).toBe('abr-down');
    expect(total(d)).toBeLessThanOrEqual(d.ceilingKbps);
    // It keeps climbing while frames are lost, up to its limit.
    const later = run(abr, 1000, repeat({ ...CLEAN, unrecoveredFrames: 1 }, 5));
    expect(later.at(-1)!.parity.delta.minPerBlock).toBe(ABR_TUNING.maxParityPerBlock);
    expect(later.at(-1)!.parity.delta.rate).toBeLessThanOrEqual(ABR_TUNING.maxDeltaParity);
  });

  it('lets parity give way under congestion once the video is at the floor', () => {
    const profile = qosProfile('balanced');
    const abr = new AbrController({ profile, fps: 30 });
    run(abr, 0, repeat({ ...CLEAN, pilotChunkLoss: 0.1, unrecoveredFrames: 2 }, 3));
    expect(abr.decision.parity.delta.minPerBlock).toBeGreaterThan(PARITY_FLOOR);
    const congested = run(abr, 3000, repeat({ ...QUEUED, pilotChunkLoss: 0.1, unrecoveredFrames: 2 }, 8));
    const last = congested.at(-1)!;
    expect(last.bitrateKbps).toBe(last.floorKbps);
    // Extra parity would only add to the queue: back to the profile's, and the total with it.
    expect(last.parity).toEqual(new AbrController({ profile, fps: 30 }).decision.parity);
    expect(total(last)).toBeLessThan(total(congested[0]!));
  });

  it('brings parity down after a loss episode (fec-down), then recovers the request in small steps', () => {
    const abr = new AbrController({ profile: qosProfile('balanced'), fps: 30 });
    const start = abr.decision;
    run(abr, 0, repeat({ ...CLEAN, pilotChunkLoss: 0.1, unrecoveredFrames: 2 }, 3));
    const lossy = abr.decision;
    expect(lossy.parity.delta.rate).toBeGreaterThan(start.parity.delta.rate);
    const after = run(abr, 3000, repeat(CLEAN, 60));
    const fecDowns = after.filter((d) => d.reason === 'fec-down');
    expect(fecDowns.length).toBeGreaterThan(1);
    // Each parity step down comes after a full hold of not needing it.
    const firstFecDown = after.findIndex((d) => d.reason === 'fec-down');
    expect(firstFecDown * 1000).toBeGreaterThanOrEqual(ABR_TUNING.holdMs - 1000);
    expect(after.at(-1)!.parity).toEqual(start.parity);
    expect(after.at(-1)!.bitrateKbps).toBe(start.bitrateKbps);
    // fec-down comes first, then recover; never the other way round.
    const lastFecDown = after.findLastIndex((d) => d.reason === 'fec-down');
    const firstRecover = after.findIndex((d) => d.reason === 'recover');
    expect(firstRecover === -1 || firstRecover > lastFecDown).toBe(true);
  });

  it('steps up only after several clean seconds, by less than it stepped down', () => {
    const abr = new AbrController({ profile: qosProfile('balanced'), fps: 30 });
    const before = total(abr.decision);
    const down = abr.handleTick(0, QUEUED);
    const downStep = before - total(down);
    const clean = run(abr, 1000, repeat(CLEAN, 30));
    const firstUp = clean.findIndex((d) => d.move === 'abr-up');
    expect(firstUp).toBeGreaterThanOrEqual(0);
    expect((firstUp + 1) * 1000).toBeGreaterThanOrEqual(ABR_TUNING.holdMs);
    expect(clean[firstUp]!.reason).toBe('recover');
    const upStep = total(clean[firstUp]!) - total(down);
    expect(upStep).toBeGreaterThan(0);
    expect(upStep).toBeLessThan(downStep);
  });
});

describe('AbrController limit memory', () => {
  it('after queueing delay at a total, recovers to just below it and stays there, probing past it only later', () => {
    const abr = new AbrController({ profile: qosProfile('balanced'), fps: 30 });
    const before = total(abr.decision);
    abr.handleTick(0, QUEUED);
    const clean = run(abr, 1000, repeat(CLEAN, 60));
    const within = clean.slice(0, ABR_TUNING.limitMemoryMs / 1000 - 1);
    expect(Math.max(...within.map(total))).toBeLessThanOrEqual(before * ABR_TUNING.limitMargin);
    expect(Math.max(...within.map(total))).toBeGreaterThan(before * ABR_TUNING.limitMargin * 0.9);
    expect(total(clean.at(-1)!)).toBeGreaterThan(before * ABR_TUNING.limitMargin);
  });
});

describe('AbrController suggestedFps', () => {
  it('is non-zero only at the floor while the link is still congested', () => {
    const abr = new AbrController({ profile: qosProfile('latency'), fps: 30 });
    const decisions = run(abr, 0, repeat(QUEUED, 12));
    const firstAtFloor = decisions.findIndex((d) => d.bitrateKbps === d.floorKbps);
    expect(firstAtFloor).toBeGreaterThan(0);
    // Reaching the floor is a bitrate move; still congested at the floor, the frame rate goes.
    expect(decisions.slice(0, firstAtFloor + 1).every((d) => d.suggestedFps === 0)).toBe(true);
    const next = decisions[firstAtFloor + 1]!;
    expect([next.suggestedFps, next.move]).toEqual([15, 'abr-down']);
    expect(decisions.slice(firstAtFloor + 2).every((d) => d.suggestedFps === 15 && d.move === null)).toBe(
      true,
    );

    // Clean again: the suggestion lasts until the congestion episode is over, then goes with an abr-up.
    const clean = run(abr, 12_000, repeat(CLEAN, 10));
    const lifted = clean.findIndex((d) => d.suggestedFps === 0);
    expect((lifted + 1) * 1000).toBeGreaterThanOrEqual(ABR_TUNING.holdMs);
    expect(clean[lifted]!.move).toBe('abr-up');
    expect(clean.slice(lifted).every((d) => d.suggestedFps === 0)).toBe(true);
  });

  it('stays zero above the floor however congested', () => {
    const abr = new AbrController({ profile: qosProfile('quality'), fps: 30 });
    const decisions = run(abr, 0, repeat({ ...CLEAN, smoothedRttMs: 200, minRttMs: 40 }, 3));
    expect(decisions.every((d) => d.bitrateKbps > d.floorKbps && d.suggestedFps === 0)).toBe(true);
  });
});

describe('AbrController flapping', () => {
  /**
   * Every step up of the request comes at least an up interval after the previous one, and a `recover` step
   * a full hold after the last period that was not clean (backlog, loss, residual loss, or
   * queueing delay above a quarter of the latency limit).
   */
  function expectNoFlap(
    profile: QosProfile,
    decisions: readonly AbrDecision[],
    samples: readonly AbrSample[],
  ): void {
    let lastUnclean = Number.NEGATIVE_INFINITY;
    let lastUp = Number.NEGATIVE_INFINITY;
    decisions.forEach((d, i) => {
      const s = samples[i]!;
      const minRtt = s.minRttMs ?? s.smoothedRttMs;
      const loss = Math.max(s.pilotChunkLoss, s.packetsSent > 0 ? s.packetsLost / s.packetsSent : 0);
      const clean =
        s.backlogDrops === 0 &&
        s.unrecoveredFrames === 0 &&
        loss < ABR_TUNING.lossThreshold &&
        s.smoothedRttMs - minRtt <= Math.max(profile.latencyBudgetMs, minRtt) / 4;
      if (!clean) lastUnclean = i * 1000;
      if (d.bitrateKbps > (decisions[i - 1]?.bitrateKbps ?? Number.POSITIVE_INFINITY)) {
        expect(i * 1000 - lastUp).toBeGreaterThanOrEqual(ABR_TUNING.upIntervalMs);
        if (d.reason === 'recover') expect(i * 1000 - lastUnclean).toBeGreaterThanOrEqual(ABR_TUNING.holdMs);
        lastUp = i * 1000;
      }
    });
  }

  it('never steps up under input that alternates congested and clean seconds', () => {
    for (const period of [1, 2]) {
      const abr = new AbrController({ profile: qosProfile('balanced'), fps: 30 });
      const samples = Array.from({ length: 60 }, (_, i) =>
        Math.floor(i / period) % 2 === 0 ? QUEUED : CLEAN,
      );
      const decisions = run(abr, 0, samples);
      expect(decisions.some((d) => d.move === 'abr-up')).toBe(false);
      expectNoFlap(qosProfile('balanced'), decisions, samples);
    }
  });

  it('moves at most once per hold around the loss threshold', () => {
    const abr = new AbrController({ profile: qosProfile('quality'), fps: 30 });
    const samples = Array.from({ length: 120 }, (_, i) => ({
      ...CLEAN,
      pilotChunkLoss: i % 2 === 0 ? 0.019 : 0.051,
    }));
    const decisions = run(abr, 0, samples);
    const moves = decisions.filter((d) => d.move !== null);
    // Parity up once at the first lossy second; nothing after, since the link is never clean for a hold.
    expect(moves.length).toBe(1);
    expectNoFlap(qosProfile('quality'), decisions, samples);
  });

  it('keeps every invariant over random links (seeded)', () => {
    const random = seededRandom(0x5eed);
    const configs: { profile: QosProfileName; fps: number; maxBitrateKbps: number }[] = [];
    for (const profile of ['latency', 'balanced', 'quality'] as const) {
      for (const fps of [5, 15, 30, 60]) {
        for (const maxBitrateKbps of [0, 700, 2500, 10_000]) configs.push({ profile, fps, maxBitrateKbps });
      }
    }
    let checked = 0;
    for (const config of configs) {
      const profile = qosProfile(config.profile);
      const abr = new AbrController({ profile, fps: config.fps, maxBitrateKbps: config.maxBitrateKbps });
      const { ceilingKbps, floorKbps } = abr;
      const floorTotal = floorKbps + parityKbpsFor(floorKbps, config.fps, profile.parity.delta);
      const samples: AbrSample[] = [];
      let regime = 0;
      for (let i = 0; i < 150; i++) {
        if (random() < 0.15) regime = Math.floor(random() * 5);
        const minRtt = 20 + random() * 100;
        samples.push({
          smoothedRttMs: minRtt + (regime === 1 ? 60 + random() * 300 : random() * 20),
          minRttMs: minRtt,
          deliveryRateKbps: random() < 0.5 ? 0 : random() * 8000,
          packetsSent: Math.floor(random() * 1000),
          packetsLost: regime === 2 ? Math.floor(random() * 200) : 0,
          backlogDrops: regime === 3 && random() < 0.7 ? 1 + Math.floor(random() * 5) : 0,
          pilotChunkLoss: regime === 4 ? random() * 0.3 : random() * 0.01,
          unrecoveredFrames: regime === 4 && random() < 0.5 ? Math.floor(random() * 4) : 0,
        });
      }
      const decisions = run(abr, 0, samples);
      decisions.forEach((d, i) => {
        const prev = decisions[i - 1] ?? d;
        expect(d.bitrateKbps).toBeGreaterThanOrEqual(floorKbps);
        expect(d.bitrateKbps).toBeLessThanOrEqual(ceilingKbps);
        expect(Number.isInteger(d.bitrateKbps)).toBe(true);
        expect(d.parity.delta.minPerBlock).toBeGreaterThanOrEqual(PARITY_FLOOR);
        expect(d.parity.key.minPerBlock).toBeGreaterThanOrEqual(PARITY_FLOOR);
        expect(d.parity.key.rate).toBeGreaterThanOrEqual(d.parity.delta.rate);
        // Video plus parity inside the ceiling; only a floor whose minimum parity cannot fit is exempt.
        const fits = d.bitrateKbps + parityKbpsFor(d.bitrateKbps, config.fps, d.parity.delta) <= ceilingKbps;
        const exempt = d.bitrateKbps === floorKbps && floorTotal > ceilingKbps;
        expect(fits || exempt, `${JSON.stringify(config)} tick ${i}: ${JSON.stringify(d)}`).toBe(true);
        if (d.suggestedFps > 0) expect(d.bitrateKbps).toBe(floorKbps);
        expect(ABR_REASONS).toContain(d.reason);
        if (d.bitrateKbps < prev.bitrateKbps) expect(d.move).toBe('abr-down');
        if (d.bitrateKbps > prev.bitrateKbps) expect(d.move).toBe('abr-up');
        checked++;
      });
      expectNoFlap(profile, decisions, samples);
    }
    expect(checked).toBe(configs.length * 150);
  });
});

describe('parity budget', () => {
  it('counts parity bytes exactly as the packer makes them', () => {
    const policies: ParityPolicy[] = [
      { rate: 0.15, minPerBlock: 3 },
      { rate: 0.4, minPerBlock: 5 },
      { rate: 0.08, minPerBlock: 3 },
    ];
    const packer = new FramePacker({ channel: 1 });
    for (const policy of policies) {
      for (const size of [10, 500, 1180, 1181, 3125, 12_500, 80_000, 200_000]) {
        const packed = packer.pack(
          {
            data: new Uint8Array(size),
            keyframe: false,
            captureTimestampUs: 0,
            gopPosition: 1,
            parity: policy,
          },
          0,
        );
        expect(parityBytesPerFrame(size, policy), `${size} bytes at ${JSON.stringify(policy)}`).toBe(
          packed.parityBytes,
        );
      }
    }
  });
});

describe('abrAgentStats', () => {
  it('gives the agent-stats fields of a decision', () => {
    const abr = new AbrController({ profile: qosProfile('balanced'), fps: 30 });
    const d = abr.handleTick(0, QUEUED);
    expect(abrAgentStats(d)).toEqual({
      abr_bitrate_kbps: d.bitrateKbps,
      abr_ceiling_kbps: 3000,
      abr_fec_delta: 0.15,
      abr_fec_key: 0.3,
      abr_reason: 'latency',
    });
  });

  it('carries a request over a profile change with startKbps', () => {
    const abr = new AbrController({ profile: qosProfile('quality'), fps: 30, startKbps: 2000 });
    expect(abr.decision.bitrateKbps).toBe(2000);
    const low = new AbrController({ profile: qosProfile('quality'), fps: 30, startKbps: 10 });
    expect(low.decision.bitrateKbps).toBe(1500);
  });
});
