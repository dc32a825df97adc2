/**
 * The relay over signalling (`docs/protocol/relay.md`): the offer's grant, `relay-allocate` with the
 * pilot's one-use token, `relay-open` to the robot, the refusals, `renew`, and the `candidates` a
 * robot's new announce sends its pilots. A real svc-cloud with signalling and its relay on
 * 127.0.0.1; the robot's attach goes over real UDP.
 */
import { createSocket } from 'node:dgram';
import { decodeRelayControl, encodeRelayControl } from '@svc/wire';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { orgs } from '../src/db/index.js';
import { databaseBackends } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';
import {
  announcement,
  type Message,
  type SignallingHarness,
  startSignalling,
  type TestSocket,
} from './support/signalling.js';

describe.each(databaseBackends.slice(0, 1))('the relay over signalling on $name', (backend) => {
  let provider: TestProvider;
  let h: SignallingHarness;
  let orgId: string;
  let serial = 0;

  beforeAll(async () => {
    provider = await startTestProvider();
    h = await startSignalling({
      backend,
      provider,
      signalling: { relay: { publicHost: '127.0.0.1', bindHost: '127.0.0.1' } },
    });
    const [org] = await h.db.insert(orgs).values({ name: 'Relay' }).returning({ id: orgs.id });
    orgId = org!.id;
  });
  afterEach(() => h.closeSockets());
  afterAll(async () => {
    await h?.dispose();
    await provider?.close();
  });

  /** A robot of the org online with `relay`, and a pilot holding an offer on it. */
  async function offered(
    relay: boolean,
    expInS = 300,
  ): Promise<{
    robotId: string;
    robot: TestSocket;
    pilot: TestSocket;
    offer: Message;
    token: string;
  }> {
    const robotId = `relay-amr-${++serial}`;
    const robot = await h.onlineRobot(await h.robot(robotId, orgId), announcement({ relay }));
    const token = await h.token({ aud: robotId, scope: 'drive', sub: `user:pilot-${serial}`, expInS });
    const { socket: pilot } = await h.connectPilot(token);
    pilot.send({ type: 'connect', robot_id: robotId });
    const offer = await pilot.expect('offer');
    await robot.expect('session-open');
    return { robotId, robot, pilot, offer, token };
  }

  /**
   * The next message of `type` (others, such as who drives, are skipped). Answers to the relay's
   * messages may come after a later heartbeat's: the server handles them asynchronously.
   */
  async function next(socket: TestSocket, type: string): Promise<Message> {
    for (;;) {
      const message = await socket.next();
      if (message.type === type) return message;
    }
  }

  /** The robot attaches to its relay port over UDP; resolves with the relay's answer. */
  async function attach(open: Message): Promise<ReturnType<typeof decodeRelayControl>> {
    const udp = createSocket('udp4');
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
    const answer = new Promise<Buffer>((resolve) => udp.once('message', resolve));
    udp.send(encodeRelayControl({ type: 'attach', token: open.token }), open.port, '127.0.0.1');
    try {
      return decodeRelayControl(await answer);
    } finally {
      udp.close();
    }
  }

  /** The pilot's first datagram claims its port (as its QUIC Initial would). */
  async function claim(allocated: Message): Promise<void> {
    const udp = createSocket('udp4');
    await new Promise<void>((resolve) =>
      udp.send(Uint8Array.of(0xc0, 1, 2, 3), allocated.port, '127.0.0.1', () => resolve()),
    );
    udp.close();
  }

  it('grants a relay in the offer; the pilot’s token opens its port once, the robot hears relay-open and attaches', async () => {
    const { robot, pilot, offer } = await offered(true);
    expect(offer.relay).toBe(true);
    expect(offer.relay_grant).toMatchObject({ host: '127.0.0.1', token: expect.stringMatching(/^svr1\./) });
    pilot.send({ type: 'relay-allocate', session_id: offer.session_id, token: offer.relay_grant.token });
    const open = await robot.expect('relay-open');
    expect(open).toMatchObject({ session_id: offer.session_id, host: '127.0.0.1', port: expect.any(Number) });
    const allocated = await next(pilot, 'relay-allocated');
    expect(allocated).toMatchObject({
      session_id: offer.session_id,
      host: '127.0.0.1',
      port: expect.any(Number),
    });
    expect(allocated.port).not.toBe(open.port);

    // The robot's attach, over UDP, with its own token.
    expect(await attach(open)).toMatchObject({ type: 'attached' });

    // The same token again: replayed.
    pilot.send({ type: 'relay-allocate', session_id: offer.session_id, token: offer.relay_grant.token });
    expect(await next(pilot, 'relay-refused')).toMatchObject({ code: 'replayed' });
  });

  it('refuses a token of another session, a session of another connection, and a robot that does not relay', async () => {
    const first = await offered(true);
    const second = await offered(true);
    first.pilot.send({
      type: 'relay-allocate',
      session_id: first.offer.session_id,
      token: second.offer.relay_grant.token,
    });
    expect(await next(first.pilot, 'relay-refused')).toMatchObject({ code: 'wrong-session' });
    // The other pilot's session is not this connection's, whatever the token.
    first.pilot.send({
      type: 'relay-allocate',
      session_id: second.offer.session_id,
      token: second.offer.relay_grant.token,
    });
    expect(await next(first.pilot, 'relay-refused')).toMatchObject({ code: 'not-allowed' });

    const plain = await offered(false);
    expect(plain.offer.relay).toBe(false);
    expect(plain.offer.relay_grant).toBeUndefined();
    plain.pilot.send({
      type: 'relay-allocate',
      session_id: plain.offer.session_id,
      token: first.offer.relay_grant.token,
    });
    const refused = await next(plain.pilot, 'relay-refused');
    expect(refused).toMatchObject({ code: 'not-allowed' });
    expect(refused.message).toMatch(/relay = false/);
  });

  it('refuses a grant that expired, and closes an allocation whose session token expires unrenewed', async () => {
    const late = await offered(true);
    h.clock.advance(61_000);
    late.pilot.send({
      type: 'relay-allocate',
      session_id: late.offer.session_id,
      token: late.offer.relay_grant.token,
    });
    expect(await next(late.pilot, 'relay-refused')).toMatchObject({ code: 'expired' });

    // A session whose token lives 40 s: allocated, renewed once, then left to expire.
    const short = await offered(true, 40);
    short.pilot.send({
      type: 'relay-allocate',
      session_id: short.offer.session_id,
      token: short.offer.relay_grant.token,
    });
    expect(await attach(await short.robot.expect('relay-open'))).toMatchObject({ type: 'attached' });
    await claim(await next(short.pilot, 'relay-allocated'));
    await expect
      .poll(() => h.signalling.relayAllocations().find((a) => a.sessionId === short.offer.session_id)?.pilot)
      .toBe(true);
    const fresh = await h.token({
      aud: short.robotId,
      scope: 'drive',
      sub: `user:pilot-${serial}`,
      expInS: 80,
    });
    short.pilot.send({ type: 'renew', session_id: short.offer.session_id, token: fresh });
    expect(await next(short.pilot, 'renewed')).toMatchObject({
      session_id: short.offer.session_id,
    });
    // Another person's token does not renew it.
    const stranger = await h.token({
      aud: short.robotId,
      scope: 'drive',
      sub: 'user:someone-else',
      expInS: 600,
    });
    short.pilot.send({ type: 'renew', session_id: short.offer.session_id, token: stranger });
    expect((await next(short.pilot, 'renew-refused')).message).toMatch(/another person/);
    h.clock.advance(45_000);
    expect(h.signalling.relayAllocations().map((a) => a.sessionId)).toContain(short.offer.session_id);
    h.clock.advance(40_000);
    expect(h.signalling.relayAllocations().map((a) => a.sessionId)).not.toContain(short.offer.session_id);
  });

  it('tells the pilots of a robot its new addresses when it announces a mapped one', async () => {
    const { robot, pilot } = await offered(true);
    const mapped = { address: '198.18.1.2', port: 40001, family: 'ipv4', kind: 'mapped' };
    robot.send(
      announcement({
        relay: true,
        candidates: [{ address: '192.0.2.7', port: 4433, family: 'ipv4', kind: 'host' }, mapped],
      }),
    );
    const told = await next(pilot, 'candidates');
    expect(told?.candidates).toContainEqual(mapped);
    // The same announce again changes nothing and tells nobody.
    robot.send(
      announcement({
        relay: true,
        candidates: [{ address: '192.0.2.7', port: 4433, family: 'ipv4', kind: 'host' }, mapped],
      }),
    );
    await robot.sync();
    expect((await pilot.sync()).filter((m) => m.type === 'candidates')).toEqual([]);
  });
});
