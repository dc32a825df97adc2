import { describe, expect, it } from 'vitest';
import type { PilotChannelStats, PilotConnectionStats } from '../src/connection/options.js';
import { formatBitrate, formatMs, formatPayload, hexDump, MAX_HEX_BYTES } from '../src/elements/format.js';
import { HISTORY_WINDOW_MS, History, hudItems, pathText, RateTracker } from '../src/elements/hud.js';
import { refusal, refusalCodeOfConnection, refusalCodeOfOffer } from '../src/elements/refusal.js';
import { SensorBoard } from '../src/elements/sensors.js';

const text = (s: string) => new TextEncoder().encode(s);

describe('sensor panel', () => {
  it('pretty-prints JSON and shows anything else as hex, 16 bytes a line', () => {
    expect(formatPayload(text('{"a":1,"b":[true]}'))).toEqual({
      kind: 'json',
      text: '{\n  "a": 1,\n  "b": [\n    true\n  ]\n}',
    });
    expect(formatPayload(text('42'))).toEqual({ kind: 'hex', text: '34 32' });
    expect(formatPayload(new Uint8Array([0xff, 0x7b]))).toEqual({ kind: 'hex', text: 'ff 7b' });
    const long = hexDump(new Uint8Array(MAX_HEX_BYTES + 3));
    expect(long.split('\n')).toHaveLength(MAX_HEX_BYTES / 16 + 1);
    expect(long.endsWith('… 3 more bytes')).toBe(true);
  });

  it('keeps the latest message per channel with its rate over 5 s and its age', () => {
    const board = new SensorBoard();
    for (let t = 0; t < 10_000; t += 100) board.record(3, 'imu', text(`{"t":${t}}`), t);
    board.record(2, 'gps', new Uint8Array([1, 2]), 9_000);
    const [gps, imu] = board.views(9_950);
    expect(gps).toMatchObject({
      name: 'gps',
      ageMs: 950,
      rateHz: 0.2,
      payload: { kind: 'hex', text: '01 02' },
    });
    expect(imu).toMatchObject({ name: 'imu', ageMs: 50, rateHz: 10, count: 100 });
    expect(imu?.payload.text).toBe('{\n  "t": 9900\n}');
    expect(board.views(30_000)[1]).toMatchObject({ rateHz: 0, ageMs: 20_100 });
  });
});

function channelStats(
  painted: number,
  r: Partial<PilotChannelStats['reassembler']>,
  bitrateBps = 2e6,
): PilotChannelStats {
  return {
    painted,
    bitrateBps,
    reassembler: {
      datagrams: 0,
      malformed: 0,
      duplicates: 0,
      surplus: 0,
      stale: 0,
      framesDelivered: 0,
      framesRepaired: 0,
      framesLost: 0,
      chunksRecovered: 0,
      chunksExpected: 0,
      ...r,
    },
  } as PilotChannelStats;
}

function stats(channel: PilotChannelStats): PilotConnectionStats {
  return {
    state: 'connected',
    sessions: 1,
    rttMs: 12.4,
    clockOffsetMs: 0,
    pathSwitches: [],
    malformedDatagrams: 0,
    lateEvents: 0,
    channels: { '1': channel },
    robot: { '1': { abr_reason: 'loss' } },
    profile: 'balanced',
  };
}

describe('HUD', () => {
  it('names the path and, on WebRTC, the transport', () => {
    const base = stats(channelStats(0, {}));
    expect(pathText(base)).toBeUndefined();
    expect(pathText({ ...base, path: 'direct', backend: 'webtransport' })).toBe('direct');
    expect(pathText({ ...base, path: 'relay', backend: 'webtransport' })).toBe('relay (through the cloud)');
    expect(pathText({ ...base, path: 'direct', backend: 'webrtc' })).toBe('direct (WebRTC)');
    expect(pathText({ ...base, path: 'relay', backend: 'webrtc' })).toBe('relay (TURN)');
  });

  it('computes frame rate, chunk loss and repairs between two snapshots', () => {
    const rates = new RateTracker();
    expect(rates.update(stats(channelStats(0, {})), 0).size).toBe(0);
    const r = rates
      .update(
        stats(channelStats(60, { datagrams: 95, chunksExpected: 100, framesRepaired: 4, framesLost: 2 })),
        2000,
      )
      .get('1');
    expect(r).toEqual({ fps: 30, chunkLoss: 0.05, repairedPerS: 2, lostPerS: 1, bitrateBps: 2e6 });
  });

  it('shows every item the operator needs, frozen pictures marked', () => {
    const items = hudItems(
      stats(channelStats(0, {})),
      { fps: 29.97, chunkLoss: 0.012, repairedPerS: 1, lostPerS: 0, bitrateBps: 1_250_000 },
      {
        channelId: '1',
        codec: 'avc1.42c01e',
        width: 640,
        height: 480,
        pictureAgeMs: 1234,
        stale: true,
        role: 'driver',
        driver: 'you',
        path: 'direct',
        profile: undefined,
        fecKernel: 'simd',
      },
    );
    expect(Object.fromEntries(items.map((i) => [i.key, i.value]))).toEqual({
      'picture-age': '1234 ms (frozen)',
      bitrate: '1.3 Mbit/s',
      fps: '30.0 fps',
      resolution: '640×480',
      codec: 'avc1.42c01e',
      rtt: '12 ms',
      loss: '1.2 %',
      repair: '1.0 repaired/s, 0.0 lost/s',
      abr: 'loss',
      path: 'direct',
      profile: 'balanced',
      role: 'driver',
      driver: 'you',
      fec: 'simd',
    });
    expect(formatBitrate(640_000)).toBe('640 kbit/s');
    expect(formatMs(Number.NaN)).toBe('–');
    expect(formatMs(12_345)).toBe('12.3 s');
  });

  it('keeps the last minute of samples for the charts', () => {
    const history = new History();
    for (let t = 0; t <= 90_000; t += 1000) history.push(t, t / 1000, 1e6, 0.01);
    expect(history.times).toHaveLength(HISTORY_WINDOW_MS / 1000 + 1);
    expect(history.times[0]).toBe(30);
    expect(history.pictureAgeMs.at(-1)).toBe(90);
    expect(history.bitrateKbps.at(-1)).toBe(1000);
    expect(history.lossPercent.at(-1)).toBe(1);
    history.push(91_000, Number.NaN, undefined, undefined);
    expect([history.pictureAgeMs.at(-1), history.bitrateKbps.at(-1)]).toEqual([null, null]);
  });
});

describe('refusals', () => {
  it('maps offer errors and the connection refusal codes to what the cockpit says', () => {
    expect(refusalCodeOfOffer('forbidden')).toBe('no-access');
    expect(refusalCodeOfOffer('bad-token')).toBe('bad-token');
    expect(refusalCodeOfOffer('robot-offline')).toBe('robot-offline');
    expect(refusalCodeOfOffer('timeout')).toBeUndefined();
    expect(refusalCodeOfConnection('forbidden')).toBe('no-access');
    expect(refusalCodeOfConnection('unknown-robot')).toBe('unknown-robot');
    expect(refusalCodeOfConnection('token-refused')).toBe('bad-token');
    expect(refusalCodeOfConnection('signed-out')).toBe('signed-out');
    expect(refusalCodeOfConnection('robot-denied')).toBe('refused');
    expect(refusalCodeOfConnection('driver-slot-held')).toBe('slot-taken');
  });

  it('says what happened and what to do; an offline robot and a taken slot are not final unless the connection ended', () => {
    const codes = [
      'no-access',
      'unknown-robot',
      'robot-offline',
      'bad-token',
      'signed-out',
      'no-token',
      'slot-taken',
      'refused',
    ] as const;
    for (const code of codes) {
      const shown = refusal(code, 'the service said so');
      expect(shown.title.length).toBeGreaterThan(10);
      expect(shown.action.length).toBeGreaterThan(10);
      expect(shown.detail).toBe('the service said so');
      expect(shown.final).toBe(code !== 'robot-offline' && code !== 'slot-taken');
    }
    expect(refusal('robot-offline', undefined, true).final).toBe(true);
    expect(refusal('refused', '')).not.toHaveProperty('detail');
  });
});
