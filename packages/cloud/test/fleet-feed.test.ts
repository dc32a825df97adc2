/**
 * The fleet feed on fake time, with signalling stood in for and a real database: changes are
 * coalesced into one write per flush with each robot's newest state, a change nobody would see is
 * not sent, the heartbeat comes every 15 s, a stream ends when its access token expires and when
 * its client reads too slowly.
 */
import { FakeClock } from '@svc/runtime/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FleetFeed, type FleetSink } from '../src/api/fleet-feed.js';
import { OrgPeople } from '../src/api/robot-view.js';
import { memberships, orgs, robots, users } from '../src/db/index.js';
import type { PresenceView, RobotChange, SignallingHandle } from '../src/signalling/index.js';
import { databaseBackends, type TestDatabase } from './support/databases.js';

/** A sink that records what the feed writes. */
class RecordingSink implements FleetSink {
  readonly writes: string[] = [];
  ended: string | undefined;
  bufferedBytes = 0;

  write(text: string): void {
    this.writes.push(text);
  }

  end(text: string): void {
    this.ended = text;
  }

  /** The JSON of each event written since the snapshot, by write. */
  events(): unknown[][] {
    return this.writes.slice(1).map((text) =>
      text
        .split('\n\n')
        .filter((block) => block.includes('data: '))
        .map((block) => JSON.parse(block.slice(block.indexOf('data: ') + 6))),
    );
  }
}

/** Signalling as the feed sees it: presence by robot, and the listener it registers. */
function fakeSignalling() {
  const presence = new Map<string, PresenceView>();
  let listener: ((change: RobotChange) => void) | undefined;
  const handle: SignallingHandle = {
    onRobotChange(l) {
      listener = l;
      return () => {
        listener = undefined;
      };
    },
    presenceOf: (robotId) => presence.get(robotId),
    revokeSession: () => false,
    robotDeleted: () => undefined,
    flushAudit: async () => undefined,
  };
  return {
    handle,
    /** The robot's presence is now `view`; the feed is told. */
    set(robotId: string, view: PresenceView | undefined) {
      if (view === undefined) presence.delete(robotId);
      else presence.set(robotId, view);
      listener?.({ kind: 'presence', robotId, lastSeenAt: view?.lastSeenAt?.getTime() ?? 0 });
    },
    /** The feed is told of a change that changes nothing it shows. */
    touch(robotId: string) {
      listener?.({ kind: 'presence', robotId, lastSeenAt: 0 });
    },
  };
}

function online(at: Date, sessions: number): PresenceView {
  return {
    online: true,
    lastSeenAt: at,
    channels: [],
    candidates: [],
    relay: false,
    backends: ['quic'],
    sessions: Array.from({ length: sessions }, (_, i) => ({
      sessionId: `s${i}`,
      role: 'observer' as const,
      sub: 'anonymous',
      started: true,
      path: 'direct' as const,
      backend: 'quic' as const,
    })),
  };
}

describe('the fleet feed', () => {
  let database: TestDatabase;
  let orgId: string;
  let userId: string;
  let clock: FakeClock;
  let signalling: ReturnType<typeof fakeSignalling>;
  let feed: FleetFeed;
  const warnings: string[] = [];

  beforeAll(async () => {
    database = await databaseBackends[0]!.create();
    const { db } = database.database;
    const [org] = await db.insert(orgs).values({ name: 'Fleet' }).returning();
    const [user] = await db
      .insert(users)
      .values({ oidcIssuer: 'https://idp.test', oidcSubject: 'viewer' })
      .returning();
    orgId = org!.id;
    userId = user!.id;
    await db.insert(memberships).values({ orgId, userId, role: 'viewer' });
    await db.insert(robots).values([
      { robotId: 'r1', orgId, publicKey: 'k1' },
      { robotId: 'r2', orgId, publicKey: 'k2' },
    ]);
  });
  beforeEach(() => {
    feed?.close();
    clock = new FakeClock(0, Date.UTC(2026, 10, 27, 9));
    signalling = fakeSignalling();
    feed = new FleetFeed({
      db: database.database.db,
      signalling: signalling.handle,
      people: new OrgPeople({ db: database.database.db, now: () => clock.now() }),
      clock,
      log: { warn: (_fields, message) => warnings.push(message), error: (_f, m) => warnings.push(m) },
    });
  });
  afterAll(async () => {
    feed?.close();
    await database?.dispose();
    expect(warnings).toEqual([]);
  });

  async function subscribe(expiresAtMs?: number) {
    const sink = new RecordingSink();
    await feed.subscribe({ orgId, userId, expiresAtMs }, sink);
    return sink;
  }

  it('writes the changes of one moment together after a quiet spell, then at most once per interval, each robot with its newest state', async () => {
    const sink = await subscribe();
    expect(sink.writes).toHaveLength(1);
    expect(sink.writes[0]).toMatch(/^event: snapshot\ndata: \{"type":"snapshot"/);
    clock.advance(100);
    const at = new Date(clock.wallNow());
    for (let n = 1; n <= 50; n++) signalling.set('r1', online(at, n % 4));
    signalling.set('r2', online(at, 0));
    signalling.set('r1', online(at, 3));
    expect(sink.writes).toHaveLength(1);
    // After a quiet spell, on the next turn of the event loop: not held back for the interval.
    clock.advance(0);
    expect(sink.events()).toEqual([
      [
        expect.objectContaining({
          type: 'robot-updated',
          robot: expect.objectContaining({ robotId: 'r1', online: true, sessions: expect.any(Array) }),
        }),
        expect.objectContaining({ type: 'robot-updated', robot: expect.objectContaining({ robotId: 'r2' }) }),
      ],
    ]);
    const [[r1]] = sink.events() as [[{ robot: { sessions: unknown[] } }]];
    expect(r1.robot.sessions).toHaveLength(3);
    // Right after a flush, changes wait for the interval, and go together.
    signalling.set('r2', online(at, 1));
    signalling.set('r1', online(at, 2));
    clock.advance(99);
    expect(sink.writes).toHaveLength(2);
    clock.advance(1);
    expect(sink.events().at(-1)).toHaveLength(2);
  });

  it('sends nothing for a change that changes nothing shown', async () => {
    const at = new Date(clock.wallNow());
    const sink = await subscribe();
    signalling.set('r1', online(at, 1));
    clock.advance(100);
    expect(sink.writes).toHaveLength(2);
    const before = sink.writes.length;
    signalling.touch('r1');
    clock.advance(100);
    expect(sink.writes).toHaveLength(before);
    signalling.set('r1', undefined);
    clock.advance(100);
    expect(sink.events().at(-1)).toEqual([
      expect.objectContaining({ robot: expect.objectContaining({ robotId: 'r1', online: false }) }),
    ]);
  });

  it('writes a heartbeat comment every 15 s', async () => {
    const sink = await subscribe();
    clock.advance(14_999);
    expect(sink.writes).toHaveLength(1);
    clock.advance(1);
    expect(sink.writes.at(-1)).toBe(': heartbeat\n\n');
    clock.advance(15_000);
    expect(sink.writes.filter((w) => w === ': heartbeat\n\n')).toHaveLength(2);
  });

  it('ends a stream when its access token expires, and frees its place', async () => {
    const sink = await subscribe(clock.wallNow() + 60_000);
    expect(feed.streamsOf(userId)).toBe(1);
    clock.advance(59_999);
    expect(sink.ended).toBeUndefined();
    clock.advance(1);
    expect(sink.ended).toMatch(/^event: end\ndata: \{"type":"end","reason":"credential-expired"/);
    expect(feed.streamsOf(userId)).toBe(0);
  });

  it('ends a stream whose client leaves too much unread', async () => {
    const sink = await subscribe();
    sink.bufferedBytes = 5 * 1024 * 1024;
    clock.advance(15_000);
    expect(sink.ended).toMatch(/"reason":"too-slow"/);
    expect(feed.streamsOf(userId)).toBe(0);
  });

  it('refuses a sixth stream of one user, and ends every stream when it closes', async () => {
    const sinks = [];
    for (let i = 0; i < 5; i++) sinks.push(await subscribe());
    await expect(subscribe()).rejects.toMatchObject({ code: 'rate-limited' });
    feed.close();
    for (const sink of sinks) expect(sink.ended).toMatch(/"reason":"server-closing"/);
    expect(feed.streamsOf(userId)).toBe(0);
  });
});
