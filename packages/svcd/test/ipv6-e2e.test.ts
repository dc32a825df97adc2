/**
 * IPv6 from the browser: in a network with no IPv4 but loopback (unique-local addresses on every
 * link, routed without NAT), a robot with `ipv6 = true` announces its ULA address and Chromium
 * reaches it directly over IPv6.
 */

import { type NetnsFleet, startNetnsFleet } from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let fleet: NetnsFleet;

beforeAll(async () => {
  fleet = await startNetnsFleet({ ipv4: false, ipv6: true, nat: 'none' });
}, 180_000);

afterAll(async () => {
  await fleet?.stop();
});

describe('an IPv6-only network', () => {
  it('the robot announces its ULA address and Chromium plays the camera over it, directly', async () => {
    const v6 = fleet.topology.addresses.ipv6!;
    const robot = await fleet.robot('v6-bot', { agent: ['ipv6 = true', 'relay = true'] });
    const listed = await fleet.cloud.call('GET', '/api/v1/robots/v6-bot', { token: fleet.alice.accessToken });
    expect(listed.body.robot.candidates).toContainEqual(
      expect.objectContaining({ address: v6.robot, family: 'ipv6', kind: 'host' }),
    );
    expect(listed.body.robot.candidates.every((c: { family: string }) => c.family === 'ipv6')).toBe(true);

    const { page } = await fleet.openPilot('v6-bot', await robot.token('drive'));
    await page
      .locator('svc-pilot .state', { hasText: 'connected' })
      .waitFor({ timeout: 30_000 })
      .catch(async (err: unknown) => {
        throw new Error(
          `not connected: ${await page.locator('svc-pilot .state').textContent()}\n${robot.daemon.log().slice(-4000)}`,
          { cause: err },
        );
      });
    await page.locator('svc-pilot dd[data-key="path"]', { hasText: /^direct$/ }).waitFor({ timeout: 10_000 });
    await page
      .locator('svc-pilot dd[data-key="fps"]', { hasText: /[1-9][\d.]* fps/ })
      .waitFor({ timeout: 30_000 });
    // The robot saw the pilot come from the internet namespace's IPv6 address.
    const opened = robot.daemon
      .log()
      .split('\n')
      .find((line) => line.includes('"msg":"pilot session opened"'));
    expect(opened).toBeDefined();
    expect(JSON.parse(opened!).remote).toMatch(new RegExp(`^\\[${v6.cloudWan}\\]:\\d+$`));
    await robot.stop();
  });
});
