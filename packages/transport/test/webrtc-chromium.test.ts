/**
 * The WebRTC backend against Chromium's own `RTCPeerConnection`: the page makes the offer with the
 * three negotiated channels of `docs/protocol/webrtc.md`, the robot answers with `answerWebRtc`,
 * candidates trickle both ways (the page's host candidates hidden behind mDNS names, as a browser
 * gives them). Datagrams of the largest size both ways, the control stream, and the close's code.
 */
import type { Server } from 'node:http';
import { type LaunchedChromium, launchChromium } from '@svc/testkit';
import { RTC_CHANNELS as CHANNELS, RTC_MAX_DATAGRAM_BYTES as MAX_DATAGRAM_BYTES } from '@svc/wire';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerWebRtc } from '../src/webrtc/peer.js';
import { servePage } from './support/serve-page.js';

/** The page's side, run in Chromium: a peer connection whose offer and candidates the test carries. */
const PAGE = `<!doctype html><meta charset="utf-8"><title>rtc</title><script>
const CHANNELS = ${JSON.stringify(CHANNELS)};
window.rtc = { candidates: [], datagrams: [], control: '', session: [] };
window.startRtc = async () => {
  const pc = new RTCPeerConnection();
  const dc = {};
  for (const [name, spec] of Object.entries(CHANNELS)) {
    dc[name] = pc.createDataChannel(spec.label, {
      negotiated: true, id: spec.id, ordered: spec.ordered, ...(spec.maxRetransmits === undefined ? {} : { maxRetransmits: spec.maxRetransmits }),
    });
    dc[name].binaryType = 'arraybuffer';
  }
  dc.datagrams.onmessage = (e) => window.rtc.datagrams.push(new Uint8Array(e.data));
  dc.control.onmessage = (e) => { window.rtc.control += new TextDecoder().decode(e.data); };
  dc.session.onmessage = (e) => window.rtc.session.push(e.data);
  pc.onicecandidate = (e) => { if (e.candidate) window.rtc.candidates.push([e.candidate.candidate, e.candidate.sdpMid]); };
  window.rtc.opened = Promise.all(Object.values(dc).map((c) => new Promise((r) => { c.onopen = r; })));
  window.rtc.pc = pc;
  window.rtc.dc = dc;
  await pc.setLocalDescription(await pc.createOffer());
  return pc.localDescription.sdp;
};
</script>`;

describe('WebRTC backend with Chromium', () => {
  let chromium: LaunchedChromium;
  let served: { server: Server; origin: string };
  let context: BrowserContext;

  beforeAll(async () => {
    chromium = await launchChromium();
    served = await servePage(PAGE);
  });

  afterAll(async () => {
    await context?.close();
    served?.server.close();
    await chromium?.close();
  });

  it('connects to the browser, carries full-size datagrams and the control stream, and tells it the close', async () => {
    context = await chromium.browser.newContext();
    const page: Page = await context.newPage();
    await page.goto(`${served.origin}/`);
    const offer = await page.evaluate(() =>
      (window as unknown as { startRtc(): Promise<string> }).startRtc(),
    );
    expect(offer).toContain('m=application');

    const robotCandidates: [string, string][] = [];
    const answer = await answerWebRtc({
      offerSdp: offer,
      path: '/robots/r1',
      onCandidate: (candidate, mid) => robotCandidates.push([candidate, mid]),
      connectTimeoutMs: 10_000,
    });
    await page.evaluate(
      (sdp) =>
        (window as unknown as { rtc: { pc: RTCPeerConnection } }).rtc.pc.setRemoteDescription({
          type: 'answer',
          sdp,
        }),
      answer.sdp,
    );
    // Trickle both ways until the channels open.
    let sessionUp = false;
    const session = answer.session.then((s) => {
      sessionUp = true;
      return s;
    });
    let fromPage = 0;
    let fromRobot = 0;
    for (let i = 0; i < 200 && !sessionUp; i++) {
      const pageCandidates = await page.evaluate(
        () => (window as unknown as { rtc: { candidates: [string, string][] } }).rtc.candidates,
      );
      for (const [candidate, mid] of pageCandidates.slice(fromPage))
        answer.addRemoteCandidate(candidate, mid);
      fromPage = pageCandidates.length;
      const fresh = robotCandidates.slice(fromRobot);
      fromRobot = robotCandidates.length;
      if (fresh.length > 0) {
        await page.evaluate(async (list) => {
          const pc = (window as unknown as { rtc: { pc: RTCPeerConnection } }).rtc.pc;
          for (const [candidate, sdpMid] of list) await pc.addIceCandidate({ candidate, sdpMid });
        }, fresh);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const robot = await session;
    await page.evaluate(() => (window as unknown as { rtc: { opened: Promise<unknown> } }).rtc.opened);

    const atRobot: Uint8Array[] = [];
    let control = '';
    robot.setHandlers({
      onDatagram: (d) => atRobot.push(d),
      onControlData: (b) => {
        control += new TextDecoder().decode(b);
      },
    });
    await page.evaluate((size) => {
      const { dc } = (window as unknown as { rtc: { dc: Record<string, RTCDataChannel> } }).rtc;
      for (let i = 0; i < 20; i++) dc.datagrams!.send(new Uint8Array(size).fill(i));
      dc.control!.send(new TextEncoder().encode('{"type":"hello","v":1}\n'));
    }, MAX_DATAGRAM_BYTES);
    for (let i = 0; i < 20; i++)
      expect(robot.sendDatagram(new Uint8Array(MAX_DATAGRAM_BYTES).fill(100 + i))).toBe(true);
    robot.writeControl(new TextEncoder().encode('{"type":"welcome"}\n'));

    const deadline = Date.now() + 5000;
    let atPage: { datagrams: number[]; control: string } = { datagrams: [], control: '' };
    while (Date.now() < deadline) {
      atPage = await page.evaluate(() => {
        const { rtc } = window as unknown as { rtc: { datagrams: Uint8Array[]; control: string } };
        return {
          datagrams: rtc.datagrams.map((d) => (d.byteLength === 1140 ? d[0]! : -1)),
          control: rtc.control,
        };
      });
      if (atRobot.length === 20 && atPage.datagrams.length === 20 && atPage.control !== '') break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(atRobot.map((d) => [d.byteLength, d[0]])).toEqual(
      expect.arrayContaining(Array.from({ length: 20 }, (_, i) => [MAX_DATAGRAM_BYTES, i])),
    );
    expect(new Set(atPage.datagrams)).toEqual(new Set(Array.from({ length: 20 }, (_, i) => 100 + i)));
    expect(control).toBe('{"type":"hello","v":1}\n');
    expect(atPage.control).toBe('{"type":"welcome"}\n');
    expect(robot.stats().rttMs).toBeGreaterThanOrEqual(0);

    robot.close(4003, 'token revoked');
    const closes = await (async () => {
      for (let i = 0; i < 200; i++) {
        const got = await page.evaluate(
          () => (window as unknown as { rtc: { session: string[] } }).rtc.session,
        );
        if (got.length > 0) return got;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      return [];
    })();
    expect(closes.map((m) => JSON.parse(m))).toEqual([
      { type: 'close', code: 4003, reason: 'token revoked' },
    ]);
  }, 60_000);
});
