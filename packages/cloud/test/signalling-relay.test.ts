/**
 * The relay over signalling (`docs/protocol/relay.md`): the offer's grant, `relay-allocate` with the
 * pilot's one-use token, `relay-open` to the robot, the refusals, `renew`, and the `candidates` a
 * robot's new announce sends its pilots. A real svc-cloud with signalling and its relay on
 * 127.0.0.1; the robot's attach goes over real UDP.
 */
import { createSocket } from 'node:dgram';
import { decodeRelayControl, encodeRelayControl } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { databaseBackends } from './support/databases.js';
import {
  announcement,
  type Message,
  nextOfType,
  signallingSuite,
  type TestSocket,
} from './support/signalling.js';

describe.each(databaseBackends.slice(0, 1))('the relay over signalling on $name', (backend) => {
  const suite = signallingSuite(backend, 'Relay', {
    relay: { publicHost: '127.0.0.1', bindHost: '127.0.0.1' },
  });
  let serial = 0;

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
    const robot = await suite.h.onlineRobot(
      await suite.h.robot(robotId, suite.orgId),
      announcement({ relay }),
    );
    const token = await suite.h.token({ aud: robotId, scope: 'drive', sub: `user:pilot-${serial}`, expInS });
    const { socket: pilot } = await suite.h.connectPilot(token);
    pilot.send({ type: 'connect', robot_id: robotId });
    const offer = await pilot.expect('offer');
    await robot.expect('session-open');
    return { robotId, robot, pilot, offer, token };
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
    const allocated = await nextOfType(pilot, 'relay-allocated');
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
    expect(await nextOfType(pilot, 'relay-refused')).toMatchObject({ code: 'replayed' });
  });

  it('refuses a token of another session, a session of another connection, and a robot that does not relay', async () => {
    const first = await offered(true);
    const second = await offered(true);
    first.pilot.send({
      type: 'relay-allocate',
      session_id: first.offer.session_id,
      token: second.offer.relay_grant.token,
    });
    expect(await nextOfType(first.pilot, 'relay-refused')).toMatchObject({ code: 'wrong-session' });
    // The other pilot's session is not this connection's, whatever the token.
    first.pilot.send({
      type: 'relay-allocate',
      session_id: second.offer.session_id,
      token: second.offer.relay_grant.token,
    });
    expect(await nextOfType(first.pilot, 'relay-refused')).toMatchObject({ code: 'not-allowed' });

    const plain = await offered(false);
    expect(plain.offer.relay).toBe(false);
    expect(plain.offer.relay_grant).toBeUndefined();
    plain.pilot.send({
      type: 'relay-allocate',
      session_id: plain.offer.session_id,
      token: first.offer.relay_grant.token,
    });
    const refused = await nextOfType(plain.pilot, 'relay-refused');
    expect(refused).toMatchObject({ code: 'not-allowed' });
    expect(refused.message).toMatch(/relay = false/);
  });

  it('refuses a grant that expired, and closes an allocation whose session token expires unrenewed', async () => {
    const late = await offered(true);
    suite.h.clock.advance(61_000);
    late.pilot.send({
      type: 'relay-allocate',
      session_id: late.offer.session_id,
      token: late.offer.relay_grant.token,
    });
    expect(await nextOfType(late.pilot, 'relay-refused')).toMatchObject({ code: 'expired' });

    // A session whose token lives 40 s: allocated, renewed once, then left to expire.
    const short = await offered(true, 40);
    short.pilot.send({
      type: 'relay-allocate',
      session_id: short.offer.session_id,
      token: short.offer.relay_grant.token,
    });
    expect(await attach(await short.robot.expect('relay-open'))).toMatchObject({ type: 'attached' });
    await claim(await nextOfType(short.pilot, 'relay-allocated'));
    await expect
      .poll(
        () =>
          suite.h.signalling.relayAllocations().find((a) => a.sessionId === short.offer.session_id)?.pilot,
      )
      .toBe(true);
    const fresh = await suite.h.token({
      aud: short.robotId,
      scope: 'drive',
      sub: `user:pilot-${serial}`,
      expInS: 80,
    });
    short.pilot.send({ type: 'renew', session_id: short.offer.session_id, token: fresh });
    expect(await nextOfType(short.pilot, 'renewed')).toMatchObject({
      session_id: short.offer.session_id,
    });
    // Another person's token does not renew it.
    const stranger = await suite.h.token({
      aud: short.robotId,
      scope: 'drive',
      sub: 'user:someone-else',
      expInS: 600,
    });
    short.pilot.send({ type: 'renew', session_id: short.offer.session_id, token: stranger });
    expect((await nextOfType(short.pilot, 'renew-refused')).message).toMatch(/another person/);
    suite.h.clock.advance(45_000);
    expect(suite.h.signalling.relayAllocations().map((a) => a.sessionId)).toContain(short.offer.session_id);
    suite.h.clock.advance(40_000);
    expect(suite.h.signalling.relayAllocations().map((a) => a.sessionId)).not.toContain(
      short.offer.session_id,
    );
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
    const told = await nextOfType(pilot, 'candidates');
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
