import { createSocket, type Socket } from 'node:dgram';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '@svc/media';
import { ChromiumSession, freeUdpPort } from '@svc/testkit';
import { decodePublisherControl } from '@svc/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { serve } from '../src/serve.js';
import type { CommandsResult } from './fixtures/commands-page.js';

const page = fileURLToPath(new URL('./fixtures/commands-page.ts', import.meta.url));

let chromium: ChromiumSession;
beforeAll(async () => {
  chromium = await ChromiumSession.open();
});
afterAll(async () => {
  await chromium?.close();
});

interface Listener {
  readonly socket: Socket;
  readonly port: number;
  readonly received: Buffer[];
  /** Resolves once `check` holds, re-checked at every datagram. */
  until(check: (received: Buffer[]) => boolean): Promise<void>;
}

async function listener(): Promise<Listener> {
  const socket = createSocket('udp4');
  const received: Buffer[] = [];
  const waiters: (() => void)[] = [];
  socket.on('message', (m) => {
    received.push(m);
    for (const w of waiters.splice(0)) w();
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const until = (check: (r: Buffer[]) => boolean) =>
    new Promise<void>((resolve) => {
      const test = () => (check(received) ? resolve() : waiters.push(test));
      test();
    });
  return { socket, port: socket.address().port, received, until };
}

const close = (s: Socket) => new Promise<void>((resolve) => s.close(() => resolve()));

describe('pilot SDK commands and sensors against svcd (dev mode, Chromium)', () => {
  it("the driver's command reaches the command output, the observer's is not sent, sensors reach both", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'svcd-cmd-'));
    const commands = await listener();
    const publisher = await listener();
    const sensorPort = await freeUdpPort();
    const config = parseConfig(
      [
        '[agent]',
        'robot_id = "cmd-robot"',
        'signal_url = "ws://localhost/ws"',
        `credential_path = "${path.join(dir, 'credential')}"`,
        `quic_port = ${await freeUdpPort()}`,
        '[[channel]]',
        'kind = "sensor"',
        'name = "imu"',
        `input = "udp://127.0.0.1:${sensorPort}"`,
        'codec = "json"',
        '[[channel]]',
        'kind = "command"',
        'name = "drive"',
        `output = "udp://127.0.0.1:${commands.port}"`,
        'codec = "json"',
        '[publisher_control]',
        `udp = "127.0.0.1:${publisher.port}"`,
      ].join('\n'),
    );
    const daemon = await serve({ config, logger: silentLogger, dev: true, host: '127.0.0.1' });
    let stopped: Promise<void> | undefined;
    const stop = () => {
      stopped ??= daemon.stop();
      return stopped;
    };
    const sender = createSocket('udp4');
    const sensorMessages = ['{"imu":1}', '{"imu":2}', '{"imu":3}'];
    // Once both pilots are in, the robot's sensor source speaks.
    daemon.sessions.on('started', (event) => {
      if (event.sessions !== 2) return;
      for (const m of sensorMessages) sender.send(m, sensorPort, '127.0.0.1');
    });
    try {
      const result = await chromium.run<CommandsResult>({
        entry: page,
        exportName: 'driveAndSense',
        args: [`https://127.0.0.1:${daemon.port}/`, daemon.certificateHashes()[0], '{"linear":0.3}', 3, 20],
        timeoutMs: 60_000,
      });
      expect(result.roles).toEqual(['driver', 'observer']);
      expect(result.sent).toEqual([true, false]);
      expect(result.errors).toHaveLength(2);
      expect(result.errors[0]).toMatch(
        /"no-such-channel" is not a command channel of this robot \(command channels: drive\)/,
      );
      expect(result.errors[1]).toMatch(/exceeds 16384/);
      for (const seen of result.sensors)
        expect(seen).toEqual(sensorMessages.map((text) => ({ name: 'imu', text })));
      await commands.until((r) => r.length >= 1);
      await stop(); // the pilots' sessions end with it at the latest
      expect(commands.received.map((b) => b.toString('utf8'))).toEqual(['{"linear":0.3}']);
      await publisher.until((r) => r.filter((b) => b.includes('"ended"')).length >= 2);
      const sessions = publisher.received
        .map((b) => decodePublisherControl(b))
        .filter((m) => m.type === 'session');
      expect(sessions[0]).toEqual({
        type: 'session',
        state: 'started',
        session_id: 'e2e-driver-session',
        role: 'driver',
        sessions: 1,
      });
      expect(sessions.filter((s) => s.state === 'ended')).toHaveLength(2);
    } finally {
      await stop();
      await Promise.all([close(sender), close(commands.socket), close(publisher.socket)]);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
