/**
 * The pilot's side of operator safety, on fake time: commands stamped with their send time on the
 * robot's clock and numbered, held while the page says so (the stop command still goes out), not
 * sent before the clock offset is known; the robot watched through its heartbeat; `pagehide`
 * ending the session at once.
 */
import { type AssembledFrame, type ControlMessage, captureClockFromMs, Reassembler } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { harness, settle, toConnected, WELCOME } from './support/connection-harness.js';
import type { FakeTransport } from './support/fake-transport.js';

/** The commands the pilot sent on channel 3, reassembled as the robot would. */
function commandsSent(transport: FakeTransport): AssembledFrame[] {
  const frames: AssembledFrame[] = [];
  const reassembler = new Reassembler({ channel: 3, onFrame: (frame) => frames.push(frame) });
  for (const datagram of transport.sentDatagrams) reassembler.handleDatagram(datagram, 0);
  return frames;
}

const text = (frame: AssembledFrame) => new TextDecoder().decode(frame.data);

/** Connected, and the first pong answered 10 ms after the ping: offset = 1005 − 50 000 ms. */
async function withClock() {
  const h = harness();
  const transport = await toConnected(h);
  const ping = transport.sent.at(-1) as Extract<ControlMessage, { type: 'ping' }>;
  h.clock.advance(10);
  transport.say({ type: 'pong', t: ping.t, robot_time: 50_000 });
  await settle();
  return { h, transport, offsetMs: ping.t + 5 - 50_000 };
}

describe('commands', () => {
  it('are not sent before the clock offset is known: the robot could not judge their age', async () => {
    const h = harness();
    const transport = await toConnected(h);
    expect(h.connection.robotClockMs()).toBeUndefined();
    expect(h.connection.sendCommand('drive', '{"linear":1}')).toBe(false);
    await settle();
    expect(transport.sentDatagrams).toEqual([]);
  });

  it("carry their send time on the robot's clock, and a sequence number +1 per command", async () => {
    const { h, transport, offsetMs } = await withClock();
    const sentAt: number[] = [];
    for (const command of ['{"linear":0.5}', '{"linear":0.6}', '{"linear":0}']) {
      sentAt.push(h.clock.now() - offsetMs);
      expect(h.connection.sendCommand('drive', command)).toBe(true);
      h.clock.advance(50);
    }
    await settle();
    const frames = commandsSent(transport);
    expect(frames.map(text)).toEqual(['{"linear":0.5}', '{"linear":0.6}', '{"linear":0}']);
    expect(frames.map((f) => f.captureClockUs)).toEqual(sentAt.map(captureClockFromMs));
    expect(h.connection.robotClockMs()).toBe(h.clock.now() - offsetMs);
    const [first, second, third] = frames.map((f) => f.frameId);
    expect([(second! - first! + 0x10000) % 0x10000, (third! - second! + 0x10000) % 0x10000]).toEqual([1, 1]);
  });

  it('never carry a send time behind the previous one, when a better clock estimate moves the offset back', async () => {
    const { h, transport } = await withClock();
    expect(h.connection.sendCommand('drive', 'a')).toBe(true);
    // A quicker exchange says the robot's clock is 3 ms behind what was thought.
    h.clock.advance(1);
    const t = h.clock.now();
    h.clock.advance(2);
    transport.say({ type: 'pong', t, robot_time: 50_000 });
    await settle();
    expect(h.connection.sendCommand('drive', 'b')).toBe(true);
    await settle();
    const [a, b] = commandsSent(transport);
    expect(b!.captureClockUs).toBeGreaterThan(a!.captureClockUs);
  });

  it('are held while holdCommands has a reason; the always ones (stop, dead-man zero) still go out', async () => {
    const { h, transport } = await withClock();
    h.connection.holdCommands('the picture is 900 ms old');
    expect(h.connection.stats().commandHold).toBe('the picture is 900 ms old');
    expect(h.connection.sendCommand('drive', '{"linear":1}')).toBe(false);
    expect(h.connection.sendCommand('drive', '{"stop":true}', { always: true })).toBe(true);
    h.connection.holdCommands(undefined);
    expect(h.connection.stats().commandHold).toBeUndefined();
    expect(h.connection.sendCommand('drive', '{"linear":0.2}')).toBe(true);
    await settle();
    expect(commandsSent(transport).map(text)).toEqual(['{"stop":true}', '{"linear":0.2}']);
  });

  it('take a forged send time for tests (sentAtRobotMs), as given', async () => {
    const { h, transport } = await withClock();
    expect(h.connection.sendCommand('drive', 'old', { sentAtRobotMs: 40_000 })).toBe(true);
    await settle();
    expect(commandsSent(transport)[0]!.captureClockUs).toBe(captureClockFromMs(40_000));
  });
});

describe('the clock offset', () => {
  it('pings five times 50 ms apart after welcome, then once a second, and keeps the offset of the quickest exchange', async () => {
    const h = harness();
    const transport = await toConnected(h);
    const answer = (rttMs: number, robotMs: number) => {
      const ping = transport.sent.filter((m) => m.type === 'ping').at(-1) as { t: number };
      h.clock.advance(rttMs);
      transport.say({ type: 'pong', t: ping.t, robot_time: robotMs });
    };
    answer(30, 10_000); // offset 1000 + 15 − 10 000 = −8985
    await settle();
    h.clock.advance(50 - 30);
    answer(4, 10_100); // the quickest: 1050 + 2 − 10 100 = −9048
    await settle();
    h.clock.advance(50 - 4);
    answer(20, 10_000);
    await settle();
    expect(h.connection.stats()).toMatchObject({ clockOffsetMs: 1050 + 2 - 10_100, rttMs: 20 });
    expect(transport.sent.filter((m) => m.type === 'ping')).toHaveLength(3);
    // The burst's last two at 1150 and 1200, then one a second from there.
    const times = () => transport.sent.filter((m) => m.type === 'ping').map((m) => (m as { t: number }).t);
    h.clock.advanceTo(2199);
    await settle();
    expect(times()).toEqual([1000, 1050, 1100, 1150, 1200]);
    h.clock.advanceTo(3200);
    await settle();
    expect(times()).toEqual([1000, 1050, 1100, 1150, 1200, 2200, 3200]);
  });
});

describe('watching the robot', () => {
  const beating = { ...WELCOME, heartbeat_ms: 200 } as const;

  it('echoes each heartbeat, and stays while the robot speaks', async () => {
    const h = harness();
    const transport = await toConnected(h, beating);
    for (let seq = 0; seq < 10; seq++) {
      transport.say({ type: 'heartbeat', seq });
      await settle();
      await h.clock.advanceAsync(200);
    }
    expect(transport.sent.filter((m) => m.type === 'heartbeat')).toHaveLength(10);
    expect(h.connection.state).toBe('connected');
  });

  it('a robot silent for 3 heartbeats is lost: the pilot reconnects at once (not after QUIC’s 30 s)', async () => {
    const h = harness();
    const transport = await toConnected(h, beating);
    transport.say({ type: 'heartbeat', seq: 0 });
    await settle();
    await h.clock.advanceAsync(600);
    expect(h.connection.state).toBe('connected');
    await h.clock.advanceAsync(200);
    expect(h.connection.state).toBe('reconnecting');
    expect(h.states.at(-1)?.[1]).toMatch(
      /^the robot went silent: no control message for 800 ms; retrying in/,
    );
    expect(transport.closedWith).toEqual({ closeCode: 0, reason: 'reconnecting' });
  });

  it('without heartbeat_ms in welcome (an older robot) nothing is watched', async () => {
    const h = harness();
    await toConnected(h);
    await h.clock.advanceAsync(5000);
    expect(h.connection.state).toBe('connected');
  });
});

describe('pagehide', () => {
  it("says bye 'page closed' and closes the transport at once; the listener goes with the connection", async () => {
    const page = new EventTarget();
    const h = harness({ pageEvents: page });
    const transport = await toConnected(h);
    page.dispatchEvent(new Event('pagehide'));
    await settle();
    expect(transport.sent.at(-1)).toEqual({ type: 'bye', reason: 'page closed' });
    expect(transport.closedWith).toEqual({ closeCode: 0, reason: 'pilot closed' });
    expect(h.connection.state).toBe('closed');
    expect(h.states.at(-1)).toEqual(['closed', 'page closed']);
    page.dispatchEvent(new Event('pagehide'));
    await settle();
    expect(transport.sent.filter((m) => m.type === 'bye')).toHaveLength(1);
  });

  it('does nothing with closeOnPageHide: false', async () => {
    const page = new EventTarget();
    const h = harness({ pageEvents: page, closeOnPageHide: false });
    const transport = await toConnected(h);
    page.dispatchEvent(new Event('pagehide'));
    await settle();
    expect(h.connection.state).toBe('connected');
    expect(transport.closedWith).toBeUndefined();
  });
});
