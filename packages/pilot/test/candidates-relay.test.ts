/**
 * The candidate race with the relay as a late entrant, and the move of a relayed session to a
 * direct path, on fake time with fake transports (the test plays the robot and svc-cloud).
 */
import { FakeClock, memoryLogger } from '@svc/runtime/testing';
import type { ControlMessage } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { happyEyeballsOrder, raceCandidates } from '../src/connection/candidates.js';
import type { Link, LinkListener } from '../src/connection/link.js';
import { PathMover } from '../src/connection/path-move.js';
import { deferred, HASH, settle } from './support/connection-harness.js';
import { fakeTransports } from './support/fake-transport.js';

const V4 = ['https://198.18.1.2:4433/', 'https://198.19.0.2:4433/'];
const V6 = ['https://[fd00:19::2]:4433/', 'https://[fd00:18::7]:4433/'];
const RELAY = 'https://198.18.1.1:40001/';

describe('happyEyeballsOrder', () => {
  it('puts IPv6 first and alternates the families, each in the robot’s order', () => {
    expect(happyEyeballsOrder([...V4, ...V6])).toEqual([V6[0], V4[0], V6[1], V4[1]]);
    expect(happyEyeballsOrder(V4)).toEqual(V4);
    expect(happyEyeballsOrder([V6[0]!, ...V4])).toEqual([V6[0], V4[0], V4[1]]);
  });
});

describe('raceCandidates with the relay', () => {
  it('dials the relay only after the direct candidates’ head start, and takes it when they stay silent', async () => {
    const clock = new FakeClock();
    const t = fakeTransports();
    const relayUrl = deferred<string>();
    const race = raceCandidates({
      address: { urls: [V4[0]!], certificateHashes: [HASH] },
      staggerMs: 250,
      clock,
      createTransport: t.create,
      signal: new AbortController().signal,
      relay: { url: relayUrl.promise, headStartMs: 200 },
    });
    relayUrl.resolve(RELAY);
    await settle();
    expect(t.made.map((x) => x.url)).toEqual([V4[0]]);
    clock.advance(199);
    await settle();
    expect(t.made).toHaveLength(1);
    clock.advance(1);
    await settle();
    expect(t.made.map((x) => x.url)).toEqual([V4[0], RELAY]);
    // The relay pins the robot's certificate, exactly as the direct path does.
    expect(t.made[1]!.options.serverCertificateHashes).toEqual(t.made[0]!.options.serverCertificateHashes);
    t.made[1]!.answer();
    const result = await race;
    expect(result).toMatchObject({ ok: true, url: RELAY, path: 'relay' });
    expect(t.made[0]!.closedWith).toEqual({ closeCode: 0, reason: 'another candidate answered first' });
  });

  it('dials the relay at once when every direct candidate failed before the head start', async () => {
    const clock = new FakeClock();
    const t = fakeTransports();
    const race = raceCandidates({
      address: { urls: [V4[0]!], certificateHashes: [HASH] },
      staggerMs: 250,
      clock,
      createTransport: t.create,
      signal: new AbortController().signal,
      relay: { url: Promise.resolve(RELAY), headStartMs: 200 },
    });
    await settle();
    t.made[0]!.refuse('port unreachable');
    await settle();
    expect(t.made.map((x) => x.url)).toEqual([V4[0], RELAY]);
    t.made[1]!.answer();
    expect(await race).toMatchObject({ ok: true, path: 'relay' });
  });

  it('prefers a direct candidate that answers within the head start; the relay is never dialled', async () => {
    const clock = new FakeClock();
    const t = fakeTransports();
    const race = raceCandidates({
      address: { urls: V4, certificateHashes: [HASH] },
      staggerMs: 250,
      clock,
      createTransport: t.create,
      signal: new AbortController().signal,
      relay: { url: Promise.resolve(RELAY), headStartMs: 200 },
    });
    await settle();
    t.made[0]!.answer();
    expect(await race).toMatchObject({ ok: true, url: V4[0], path: 'direct' });
    clock.advance(1000);
    await settle();
    expect(t.made.map((x) => x.url)).toEqual([V4[0]]);
  });

  it('says why there is no path: every direct candidate failed and the relay was refused', async () => {
    const clock = new FakeClock();
    const t = fakeTransports();
    const race = raceCandidates({
      address: { urls: [V4[0]!], certificateHashes: [HASH] },
      staggerMs: 250,
      clock,
      createTransport: t.create,
      signal: new AbortController().signal,
      relay: { url: Promise.reject(new Error('the relay token was already used')), headStartMs: 200 },
    });
    await settle();
    t.made[0]!.refuse('timed out');
    const result = await race;
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.reason).toContain(`${V4[0]}: timed out`);
    expect(result.reason).toContain('relay: the relay token was already used');
  });

  it('says the relay is off when the robot does not allow it', async () => {
    const clock = new FakeClock();
    const t = fakeTransports();
    const race = raceCandidates({
      address: { urls: [V4[0]!], certificateHashes: [HASH] },
      staggerMs: 250,
      clock,
      createTransport: t.create,
      signal: new AbortController().signal,
    });
    await settle();
    t.made[0]!.refuse('timed out');
    const result = await race;
    expect(result).toMatchObject({ ok: false });
    if (!result.ok) expect(result.reason).toMatch(/does not allow the cloud relay \(relay = false/);
  });
});

describe('PathMover: off the relay', () => {
  const listenerFor = (mover: () => PathMover): LinkListener => ({
    datagram: () => undefined,
    control: (link: Link, message: ControlMessage) => mover().control(link, message),
    ended: (link: Link, reason: string) => mover().ended(link, reason),
  });

  function moverWith(urls: readonly string[]) {
    const clock = new FakeClock();
    const t = fakeTransports();
    const moved: Link[] = [];
    const mover: PathMover = new PathMover({
      address: { urls, certificateHashes: [HASH] },
      sessionId: 'session-9',
      token: () => 'token-2',
      clock,
      createTransport: t.create,
      logger: memoryLogger(),
      listener: listenerFor(() => mover),
      onMoved: (link) => moved.push(link),
    });
    return { clock, t, moved, mover };
  }

  const triesOf = (t: ReturnType<typeof fakeTransports>, url: string) => t.made.filter((x) => x.url === url);

  it('tries each candidate at once, then backs off (1 s, 2 s, 4 s …) while it fails or stays silent', async () => {
    const { clock, t, mover } = moverWith([V4[0]!]);
    mover.start();
    await settle();
    expect(triesOf(t, V4[0]!)).toHaveLength(1);
    t.made[0]!.refuse('port unreachable');
    await settle();
    // Retried 1 s after the failure.
    clock.advance(999);
    await settle();
    expect(triesOf(t, V4[0]!)).toHaveLength(1);
    clock.advance(250);
    await settle();
    expect(triesOf(t, V4[0]!)).toHaveLength(2);
    // Silent (a NAT dropping the datagrams): given up after 1.5 s, then 2 s later the next.
    clock.advance(1500);
    await settle();
    expect(t.made[1]!.closedWith).toEqual({ closeCode: 0, reason: 'no answer' });
    clock.advance(1750);
    await settle();
    expect(triesOf(t, V4[0]!)).toHaveLength(2);
    clock.advance(500);
    await settle();
    expect(triesOf(t, V4[0]!)).toHaveLength(3);
    mover.close();
  });

  it('tries a candidate the robot announces later at once, asks the robot to move, and hands over on `moved`', async () => {
    const { clock, t, moved, mover } = moverWith([V4[1]!]);
    mover.start();
    await settle();
    t.made[0]!.refuse('unreachable');
    clock.advance(300);
    await settle();
    // The robot's port was mapped: its public address comes in, and is tried without waiting.
    mover.setAddress({ urls: [V4[1]!, V4[0]!], certificateHashes: [HASH] });
    await settle();
    const direct = triesOf(t, V4[0]!);
    expect(direct).toHaveLength(1);
    // The LAN address keeps its own backoff.
    expect(triesOf(t, V4[1]!)).toHaveLength(1);
    direct[0]!.answer();
    await settle();
    expect(direct[0]!.sent).toEqual([
      { type: 'hello', v: 1, token: 'token-2', session_id: 'session-9', move: true },
    ]);
    expect(moved).toHaveLength(0);
    direct[0]!.say({ type: 'moved', path: 'direct' });
    await settle();
    expect(moved.map((l) => l.url)).toEqual([V4[0]]);
    expect(moved[0]!.path).toBe('direct');
    // Done: nothing more is tried.
    const made = t.made.length;
    clock.advance(120_000);
    await settle();
    expect(t.made).toHaveLength(made);
  });

  it('tries again when the robot refuses the move or does not answer in time', async () => {
    const { clock, t, mover } = moverWith([V4[0]!]);
    mover.start();
    await settle();
    t.made[0]!.answer();
    await settle();
    t.made[0]!.say({ type: 'denied', reason: 'no open session', code: 'session-in-use' });
    await settle();
    expect(t.made[0]!.closedWith).toEqual({ closeCode: 0, reason: 'move failed' });
    clock.advance(750);
    await settle();
    expect(t.made).toHaveLength(1);
    clock.advance(500);
    await settle();
    expect(t.made).toHaveLength(2);
    t.made[1]!.answer();
    await settle();
    // While the robot is asked, nothing else is tried; unanswered, the move fails after 2 s.
    clock.advance(2000);
    await settle();
    expect(t.made[1]!.closedWith).toEqual({ closeCode: 0, reason: 'move failed' });
    const made = t.made.length;
    mover.close();
    clock.advance(120_000);
    await settle();
    expect(t.made).toHaveLength(made);
  });
});
