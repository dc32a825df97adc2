/**
 * The pilot SDK's WebRTC transport (`openRtcTransport`) in Chromium against the robot's WebRTC
 * backend (`answerWebRtc`), their offer, answer and candidates carried by a WebSocket bridge in
 * place of svc-cloud: full-size datagrams both ways, the control stream, and the robot's close
 * code reaching the page as WebTransport's would.
 */
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { ChromiumSession } from '@svc/testkit';
import { answerWebRtc, type WebRtcAnswer, type WebRtcSession } from '@svc/transport';
import { RTC_MAX_DATAGRAM_BYTES } from '@svc/wire';
import { afterAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { RtcTransportOutcome } from './fixtures/rtc-transport-page.js';

const page = fileURLToPath(new URL('./fixtures/rtc-transport-page.ts', import.meta.url));
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The bridge: answers the page's offer with the robot's backend; resolves with the robot's session. */
async function bridge(): Promise<{ url: string; session: Promise<WebRtcSession> }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((resolve) => wss.once('listening', resolve));
  cleanups.push(() => new Promise((resolve) => wss.close(resolve)));
  const session = new Promise<WebRtcSession>((resolve, reject) => {
    wss.on('connection', (ws) => {
      let answer: WebRtcAnswer | undefined;
      let answered = false;
      const local: [string, string][] = [];
      const early: [string, string][] = [];
      const sendCandidate = (candidate: string, mid: string) =>
        ws.send(JSON.stringify({ type: 'candidate', candidate, mid }));
      ws.on('message', (data) => {
        const message = JSON.parse(String(data)) as {
          type: string;
          sdp?: string;
          candidate?: string;
          mid?: string;
        };
        if (message.type === 'candidate') {
          if (answer === undefined) early.push([message.candidate!, message.mid!]);
          else answer.addRemoteCandidate(message.candidate!, message.mid!);
          return;
        }
        void answerWebRtc({
          offerSdp: message.sdp!,
          path: '/',
          bindAddress: '127.0.0.1',
          onCandidate: (candidate, mid) =>
            answered ? sendCandidate(candidate, mid) : local.push([candidate, mid]),
        }).then((made) => {
          answer = made;
          cleanups.push(() => made.close());
          ws.send(JSON.stringify({ type: 'answer', sdp: made.sdp }));
          answered = true;
          for (const [candidate, mid] of local.splice(0)) sendCandidate(candidate, mid);
          for (const [candidate, mid] of early.splice(0)) made.addRemoteCandidate(candidate, mid);
          made.session.then(resolve, reject);
        }, reject);
      });
    });
  });
  session.catch(() => undefined);
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, session };
}

describe("the pilot SDK's WebRTC transport", () => {
  it("carries full-size datagrams and the control stream to the robot's backend, and its close code back", async () => {
    const chromium = await ChromiumSession.open();
    cleanups.push(() => chromium.close());
    const { url, session } = await bridge();
    const outcome = chromium.run<RtcTransportOutcome>({
      entry: page,
      exportName: 'exchangeOverRtc',
      args: [url, RTC_MAX_DATAGRAM_BYTES],
      timeoutMs: 30_000,
    });
    const robot = await session;
    const atRobot: Uint8Array[] = [];
    let control = '';
    robot.setHandlers({
      onDatagram: (datagram) => atRobot.push(datagram),
      onControlData: (bytes) => {
        control += new TextDecoder().decode(bytes);
      },
    });
    for (let i = 0; i < 20; i++) robot.sendDatagram(new Uint8Array(RTC_MAX_DATAGRAM_BYTES).fill(100 + i));
    robot.writeControl(new TextEncoder().encode('{"type":"welcome"}\n'));
    const deadline = Date.now() + 10_000;
    while ((atRobot.length < 20 || control === '') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(control).toBe('{"type":"hello"}\n');
    expect(atRobot.map((d) => [d.byteLength, d[0]])).toEqual(
      expect.arrayContaining(Array.from({ length: 20 }, (_, i) => [RTC_MAX_DATAGRAM_BYTES, i])),
    );
    // What the robot sent has had time to arrive before the close overtakes it on its own channel.
    await new Promise((resolve) => setTimeout(resolve, 300));
    robot.close(4003, 'token revoked');

    const seen = await outcome;
    expect(seen.maxDatagramSize).toBe(RTC_MAX_DATAGRAM_BYTES);
    expect(seen.closed).toEqual({ closeCode: 4003, reason: 'token revoked' });
    expect(seen.control).toBe('{"type":"welcome"}\n');
    expect(new Set(seen.datagrams.map(([size, first]) => `${size}:${first}`))).toEqual(
      new Set(Array.from({ length: 20 }, (_, i) => `${RTC_MAX_DATAGRAM_BYTES}:${100 + i}`)),
    );
  }, 60_000);
});
