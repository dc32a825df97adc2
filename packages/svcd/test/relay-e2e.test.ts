/**
 * The relay of last resort end to end, across a network the test builds: svc-cloud and the pilot's
 * Chromium on the "internet", robots behind a NAT router with no port mapped, real `svcd`
 * processes with ffmpeg cameras. What a person sees: the picture through the relay, labelled so in
 * the HUD and the console's API, with only QUIC ciphertext on the cloud's wire; a robot that does
 * not allow the relay named as unreachable, and why.
 */
import { type NetnsFleet, startNatPmpResponder, startNetnsFleet, type UdpPacket } from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let fleet: NetnsFleet;

beforeAll(async () => {
  fleet = await startNetnsFleet({ nat: 'masquerade' });
}, 180_000);

afterAll(async () => {
  await fleet?.stop();
});

/** Whether `payload` holds `needle`. */
function contains(payload: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= payload.length; i++) {
    for (let j = 0; j < needle.length; j++) if (payload[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

describe('a robot behind NAT with no port mapped', () => {
  it('relay allowed: video through the relay, labelled relay in the HUD and the API, only ciphertext on the wire', async () => {
    const robot = await fleet.robot('relay-bot', { agent: ['relay = true'] });
    const v4 = fleet.topology.addresses.ipv4!;
    // Everything the robot exchanges with the cloud's relay, seen on the cloud's side of the link.
    const capture = await fleet.topology.capture('internet', 'isp0', `udp and host ${v4.routerWan}`);
    const token = await robot.token('drive');
    const { page } = await fleet.openPilot('relay-bot', token);

    await page
      .locator('svc-pilot .state', { hasText: 'connected' })
      .waitFor({ timeout: 30_000 })
      .catch(async (err: unknown) => {
        throw new Error(
          `not connected: ${await page.locator('svc-pilot .state').textContent()}\n--- robot:\n${robot.daemon.log()}\n--- cloud:\n${fleet.cloud.log().slice(-6000)}`,
          { cause: err },
        );
      });
    await page.locator('svc-pilot dd[data-key="path"]', { hasText: 'relay' }).waitFor({ timeout: 10_000 });
    await page
      .locator('svc-pilot dd[data-key="fps"]', { hasText: /[1-9][\d.]* fps/ })
      .waitFor({ timeout: 30_000 });

    const sessions = await fleet.cloud.call('GET', '/api/v1/robots/relay-bot/sessions', {
      token: fleet.alice.accessToken,
    });
    expect(sessions.body.sessions).toEqual([
      expect.objectContaining({ role: 'driver', started: true, path: 'relay' }),
    ]);
    const audit = await fleet.cloud.call('GET', `/api/v1/orgs/${fleet.alice.orgId}/audit?target=relay-bot`, {
      token: fleet.alice.accessToken,
    });
    expect(audit.body.entries).toContainEqual(
      expect.objectContaining({ action: 'session.path', detail: expect.objectContaining({ path: 'relay' }) }),
    );
    expect(robot.daemon.log()).toMatch(/relay attached for a session/);

    const packets: UdpPacket[] = await capture.stop();
    const quic = packets.filter((p) => p.payload[0] !== 0);
    expect(quic.length).toBeGreaterThan(100);
    // Every datagram is a QUIC packet (long header or fixed bit) or a relay control datagram.
    expect(packets.every((p) => (p.payload[0]! & 0xc0) !== 0 || p.payload[0] === 0)).toBe(true);
    // No plaintext: neither the token the pilot sent in its hello, nor an H.264 parameter set,
    // nor the chunk header of a video datagram (version 1, channel 1) appears in any of them.
    const secrets = [
      new TextEncoder().encode(token.split('.')[2]!.slice(0, 24)),
      Uint8Array.of(0x00, 0x00, 0x00, 0x01, 0x67),
      new TextEncoder().encode('"type":"welcome"'),
    ];
    for (const p of packets) for (const s of secrets) expect(contains(p.payload, s)).toBe(false);
    await robot.stop();
  });

  it('relay not allowed, and no STUN or TURN: the pilot says the robot is not reachable directly, the relay is off, and WebRTC found no path either', async () => {
    const robot = await fleet.robot('no-relay-bot', { agent: ['relay = false'] });
    const { page } = await fleet.openPilot('no-relay-bot', await robot.token('drive'));
    const state = page.locator('svc-pilot .state', { hasText: 'does not allow the cloud relay' });
    await state.waitFor({ timeout: 60_000 });
    const text = await state.textContent();
    expect(text).toMatch(/no path to the robot answered/);
    expect(text).toMatch(/then WebRTC: no WebRTC connection within 15 s \(ICE found no path to the robot\)/);
    await robot.stop();
  }, 90_000);

  it('starts on the relay; when the router maps the robot’s port mid-session the pilot moves to the direct path and loses no frame', async () => {
    const topology = fleet.topology;
    const v4 = topology.addresses.ipv4!;
    const robot = await fleet.robot('moving-bot', {
      agent: ['relay = true', 'port_mapping = true', 'port_mapping_protocols = ["natpmp"]'],
    });
    const { page } = await fleet.openPilot('moving-bot', await robot.token('drive'));
    const path = page.locator('svc-pilot dd[data-key="path"]');
    await path.filter({ hasText: 'relay' }).waitFor({ timeout: 30_000 });
    await page
      .locator('svc-pilot dd[data-key="fps"]', { hasText: /[1-9][\d.]* fps/ })
      .waitFor({ timeout: 30_000 });

    // The router starts answering NAT-PMP: the robot maps its port, announces the mapped address,
    // svc-cloud passes it to the pilot, which reaches it and moves the session there.
    const responder = await startNatPmpResponder({
      spawn: (command, args) => topology.spawn('router', command, [...args]),
      lanAddress: v4.routerLan,
      wanAddress: v4.routerWan,
      wanInterface: topology.interfaces.router.wan,
    });
    try {
      await path
        .filter({ hasText: /direct \(moved off the relay, \d+ frames? lost\)/ })
        .waitFor({ timeout: 30_000 })
        .catch(async (err: unknown) => {
          throw new Error(`not moved: ${await path.textContent()}\n${robot.daemon.log().slice(-4000)}`, {
            cause: err,
          });
        });
      expect(await path.textContent()).toBe('direct (moved off the relay, 0 frames lost)');
      expect(robot.daemon.log()).toMatch(/pilot session moved to a new path/);
      const sessions = await fleet.cloud.call('GET', '/api/v1/robots/moving-bot/sessions', {
        token: fleet.alice.accessToken,
      });
      expect(sessions.body.sessions).toEqual([expect.objectContaining({ path: 'direct' })]);
      // The picture goes on.
      await page.locator('svc-pilot dd[data-key="fps"]', { hasText: /[1-9][\d.]* fps/ }).waitFor();
    } finally {
      await robot.stop();
      await responder.stop();
    }
  });

  it('an admin ending a relayed session stops the relay forwarding it within a second', async () => {
    const robot = await fleet.robot('revoked-bot', { agent: ['relay = true'] });
    const { page } = await fleet.openPilot('revoked-bot', await robot.token('drive'));
    await page.locator('svc-pilot dd[data-key="path"]', { hasText: 'relay' }).waitFor({ timeout: 30_000 });
    const listed = await fleet.cloud.call('GET', '/api/v1/robots/revoked-bot/sessions', {
      token: fleet.alice.accessToken,
    });
    const sessionId = listed.body.sessions[0].sessionId as string;
    const ended = await fleet.cloud.call('DELETE', `/api/v1/robots/revoked-bot/sessions/${sessionId}`, {
      token: fleet.alice.accessToken,
    });
    expect(ended.status).toBe(204);
    const endedAt = Date.now();
    await fleet.cloud.waitForLog(
      new RegExp(`"sessionId":"${sessionId}"[^\n]*"msg":"relay: closed"`),
      1,
      5000,
    );
    expect(Date.now() - endedAt).toBeLessThan(1000);
    await robot.stop();
  });

  it('a relayed session longer than its token lives on through renewals, on the robot and on the relay', {
    timeout: 120_000,
  }, async () => {
    const robot = await fleet.robot('renewing-bot', { agent: ['relay = true'] });
    const { page } = await fleet.openPilot('renewing-bot', await robot.token('drive', 30));
    // As the console does: a function that mints a fresh token (of the shortest lifetime, 30 s).
    await page.exposeFunction('mintToken', () => robot.token('drive', 30));
    await page.evaluate(() => {
      const pilot = document.querySelector('svc-pilot') as HTMLElement & { token: unknown };
      pilot.token = () => (window as unknown as { mintToken(): Promise<string> }).mintToken();
    });
    await page.locator('svc-pilot dd[data-key="path"]', { hasText: 'relay' }).waitFor({ timeout: 30_000 });
    // The session the function's token opened (the first one, of the fixed token, has ended).
    const sessions = async () =>
      (
        await fleet.cloud.call('GET', '/api/v1/robots/renewing-bot/sessions', {
          token: fleet.alice.accessToken,
        })
      ).body.sessions as { sessionId: string; started: boolean }[];
    await expect
      .poll(async () => (await sessions()).filter((x) => x.started).length, { timeout: 10_000 })
      .toBe(1);
    const sessionId = (await sessions()).find((x) => x.started)!.sessionId;
    const states: string[] = [];
    await page.exposeFunction('stateSeen', (state: string) => states.push(state));
    await page.evaluate(() =>
      document
        .querySelector('svc-pilot')!
        .addEventListener('svc-state', (event) =>
          (window as unknown as { stateSeen(s: string): void }).stateSeen(
            (event as CustomEvent<{ state: string }>).detail.state,
          ),
        ),
    );
    // Each 30 s token is renewed 20 s before it ends: the fourth renewal comes 40 s in, after the
    // first token expired (30 s) and the robot's grace (5 s more) would have ended the session.
    await robot.daemon.waitForLog('session token renewed', 4, 80_000);
    expect(states).toEqual([]);
    expect(await page.locator('svc-pilot .state').textContent()).toBe('connected');
    const still = await fleet.cloud.call('GET', '/api/v1/robots/renewing-bot/sessions', {
      token: fleet.alice.accessToken,
    });
    expect(still.body.sessions, JSON.stringify(still.body.sessions)).toEqual([
      expect.objectContaining({ sessionId, path: 'relay' }),
    ]);
    expect(fleet.cloud.log()).not.toMatch(
      new RegExp(`"sessionId":"${sessionId}"[^\n]*"msg":"relay: closed"`),
    );
    await page.locator('svc-pilot dd[data-key="fps"]', { hasText: /[1-9][\d.]* fps/ }).waitFor();
    await robot.stop();
  });
});
