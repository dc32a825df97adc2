/**
 * One channel's rate controller in the daemon: whose measurements decide, what reaches the
 * publisher and when. The sessions are probes giving samples (what `PilotSession.qosSample`
 * measures); the controller's own rules are tested in `@svc/qos`.
 */

import { AbrController, type AbrSample, qosProfile } from '@svc/qos';
import { silentLogger } from '@svc/runtime';
import type { ControlRole, PublisherControlMessage } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { ChannelQos, type SessionQosProbe } from '../src/channel-qos.js';
import { parseConfig, type VideoChannelConfig } from '../src/config.js';
import { VideoChannel } from '../src/video-channel.js';
import { twoLayerVideoChannel } from './support/channels.js';

const config: VideoChannelConfig = {
  kind: 'video',
  id: 1,
  name: 'front',
  input: 'rtp://127.0.0.1:5004',
  codec: 'avc1.42c00d',
  fps: 30,
  max_bitrate_kbps: 0,
  layer: [],
};

const clean: AbrSample = {
  smoothedRttMs: 20,
  minRttMs: 20,
  deliveryRateKbps: 10_000,
  packetsSent: 300,
  packetsLost: 0,
  backlogDrops: 0,
  pilotChunkLoss: 0,
  unrecoveredFrames: 0,
};
const congested: AbrSample = { ...clean, backlogDrops: 3, deliveryRateKbps: 1000 };

function probe(role: ControlRole, sample: AbrSample): SessionQosProbe {
  return { role, qosSample: () => sample };
}

function channelQos(profile = qosProfile('balanced')) {
  const sent: PublisherControlMessage[] = [];
  const qos = new ChannelQos({
    channel: new VideoChannel(config, profile, silentLogger),
    profile,
    logger: silentLogger,
    send: (m) => sent.push(m),
  });
  return { qos, sent };
}

const start = new AbrController({ profile: qosProfile('balanced'), fps: 30 }).decision;

describe('channel rate control in the daemon', () => {
  it('announces the start request, which keeps video plus parity inside the ceiling', () => {
    const { qos, sent } = channelQos();
    qos.announce();
    expect(sent).toEqual([
      {
        type: 'video-config',
        channel: 1,
        profile: 'balanced',
        maxBitrateKbps: start.bitrateKbps,
        latencyBudgetMs: 100,
        maxGopMs: 10_000,
        preferIntraRefresh: true,
        suggestedFps: 0,
        reason: 'profile',
      },
    ]);
    expect(start.bitrateKbps + start.parityKbps).toBeLessThanOrEqual(3000);
  });

  it("follows the driver's link: an observer's backlog does not lower the stream", () => {
    const { qos, sent } = channelQos();
    qos.attach(probe('driver', clean));
    qos.attach(probe('observer', congested));
    for (let s = 1; s <= 3; s++) qos.tick(s * 1000);
    expect(sent).toEqual([]);
    expect(qos.decision.bitrateKbps).toBe(start.bitrateKbps);
  });

  it('without a driver, follows the most troubled observer and tells the publisher (abr-down)', () => {
    const { qos, sent } = channelQos();
    qos.attach(probe('observer', clean));
    const detach = qos.attach(probe('observer', congested));
    qos.tick(1000);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ type: 'video-config', reason: 'abr-down', suggestedFps: 0 });
    expect((sent[0] as { maxBitrateKbps: number }).maxBitrateKbps).toBeLessThan(start.bitrateKbps);
    expect(qos.agentStats().abr_reason).toBe('backlog');
    // The troubled pilot leaves: nothing more comes down.
    detach();
    qos.tick(2000);
    expect(sent).toHaveLength(1);
  });

  it('without a session, keeps its request', () => {
    const { qos, sent } = channelQos();
    for (let s = 1; s <= 10; s++) qos.tick(s * 1000);
    expect(sent).toEqual([]);
    expect(qos.decision.bitrateKbps).toBe(start.bitrateKbps);
  });

  it("the driver's profile change: a controller in the new range from the current request, told to the publisher (pilot-request)", () => {
    const { qos, sent } = channelQos();
    qos.setProfile(qosProfile('balanced')); // the profile in force: nothing
    expect(sent).toEqual([]);
    qos.setProfile(qosProfile('latency'));
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ type: 'video-config', profile: 'latency', reason: 'pilot-request' });
    expect(qos.agentStats().abr_ceiling_kbps).toBe(1500);
    expect(qos.decision.bitrateKbps + qos.decision.parityKbps).toBeLessThanOrEqual(1500);
    expect(qos.profile.name).toBe('latency');
  });

  it('on a simulcast channel, the request picks the layer: down at once when it falls below the layer, up once after sustained headroom', () => {
    const layered = parseConfig(
      [
        '[agent]',
        'robot_id = "layers"',
        'signal_url = "wss://cloud.example/ws"',
        ...twoLayerVideoChannel({ lowPort: 5004, highPort: 5006, highMinBitrateKbps: 1500 }),
      ].join('\n'),
    ).channels[0] as VideoChannelConfig;
    const profile = qosProfile('balanced');
    const channel = new VideoChannel(layered, profile, silentLogger);
    const requests: string[] = [];
    channel.onLayerRequest = (index, name, reason) => requests.push(`${reason} ${index} ${name}`);
    const qos = new ChannelQos({ channel, profile, logger: silentLogger, now: () => 0 });
    expect(channel.targetLayerIndex).toBe(1); // the start request fits the high layer

    let sample = congested;
    qos.attach({ role: 'driver', qosSample: () => sample });
    let now = 0;
    const tick = (n: number) => {
      for (let i = 0; i < n; i++) {
        now += 1000;
        qos.tick(now);
      }
    };
    tick(3);
    expect(qos.decision.bitrateKbps).toBeLessThan(1500);
    expect(requests).toEqual(['down 0 low']);
    sample = clean;
    tick(60); // the request climbs back in small steps
    expect(qos.decision.bitrateKbps).toBeGreaterThan(1800);
    expect(requests).toEqual(['down 0 low', 'up 1 high']);
  });
});
