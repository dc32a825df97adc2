/**
 * The cockpit (`<svc-pilot>` on the plain pilot page at `/pilot/`) in headless Chromium, with a
 * real svc-cloud, a real svcd and ffmpeg RTP sources: what a person driving a robot sees and what
 * the robot's UDP ports receive.
 */
import { inflateSync } from 'node:zlib';
import { ffmpegRtpSource, freeUdpPort } from '@svc/testkit';
import type { BrowserContext, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { useCockpitFleet } from './support/cockpit-fleet.js';

const t = useCockpitFleet();

/** The page's bars, in a colour the test pattern (testsrc2) does not have, so a pixel tells bar from picture. */
const BAR = { r: 96, g: 48, b: 16 };

/**
 * Runs in the page before its scripts: records every CSP violation, and replaces
 * `navigator.getGamepads` with one scripted standard-mapping pad (`window.__pad`).
 */
function instrument(): void {
  const w = window as unknown as {
    __violations: string[];
    __commands: string[];
    __pad: { axes: number[]; buttons: boolean[] } | undefined;
  };
  w.__violations = [];
  w.__commands = [];
  w.__pad = undefined;
  document.addEventListener('securitypolicyviolation', (event) =>
    w.__violations.push(`${event.violatedDirective} ${event.blockedURI}`),
  );
  document.addEventListener('svc-command', (event) => {
    const detail = (event as CustomEvent<{ json: string; sent: boolean }>).detail;
    if (detail.sent) w.__commands.push(detail.json);
  });
  Object.defineProperty(navigator, 'getGamepads', {
    configurable: true,
    value: () => {
      const pad = w.__pad;
      if (pad === undefined) return [null];
      return [
        {
          id: 'scripted pad',
          index: 0,
          connected: true,
          mapping: 'standard',
          timestamp: performance.now(),
          axes: pad.axes,
          buttons: Array.from({ length: 17 }, (_, i) => ({
            pressed: pad.buttons[i] === true,
            touched: pad.buttons[i] === true,
            value: pad.buttons[i] === true ? 1 : 0,
          })),
        },
      ];
    },
  });
}

interface OpenedPage {
  readonly page: Page;
  readonly context: BrowserContext;
  /** Console messages of the page (type and text). */
  readonly console: string[];
}

async function openPage(
  fragment: string,
  init?: (context: BrowserContext) => Promise<void>,
): Promise<OpenedPage> {
  const console: string[] = [];
  const { page, context } = await t.openPilotPage(fragment, {
    viewport: { width: 1280, height: 900 },
    init: async (context) => {
      await context.addInitScript(instrument);
      await init?.(context);
    },
    beforeLoad: (page) =>
      page.on('console', (message) => console.push(`${message.type()}: ${message.text()}`)),
  });
  return { page, context, console };
}

function videoLines(name: string, port: number): string[] {
  return [
    '[[channel]]',
    'kind = "video"',
    `name = "${name}"`,
    `input = "rtp://127.0.0.1:${port}"`,
    'codec = "avc1.42c01e"',
    'fps = 30',
  ];
}

/** Painted frames of the visible camera so far, read from the page. */
function painted(page: Page, channel: string): Promise<number> {
  return page.evaluate((name) => {
    type Cockpit = {
      connection?: {
        channels: { id: number; name: string }[];
        stats(): { channels: Record<string, { painted: number } | undefined> };
      };
    };
    const connection = (document.querySelector('svc-pilot') as unknown as Cockpit | null)?.connection;
    const id = connection?.channels.find((c) => c.name === name)?.id;
    return id === undefined ? 0 : (connection?.stats().channels[String(id)]?.painted ?? 0);
  }, channel);
}

/** RGB of one PNG (8-bit RGB or RGBA, not interlaced), as Chromium's screenshots are. */
function decodePng(png: Buffer): { width: number; height: number; pixel(x: number, y: number): number[] } {
  let at = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Buffer[] = [];
  while (at < png.length) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const body = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const colour = body[9];
      if (body[8] !== 8 || body[12] !== 0 || (colour !== 2 && colour !== 6))
        throw new Error(`unexpected PNG format: depth ${body[8]}, colour ${colour}, interlace ${body[12]}`);
      channels = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') data.push(body);
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const out = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    for (let x = 0; x < stride; x++) {
      const value = raw[y * (stride + 1) + 1 + x]!;
      const left = x >= channels ? out[y * stride + x - channels]! : 0;
      const up = y > 0 ? out[(y - 1) * stride + x]! : 0;
      const upLeft = y > 0 && x >= channels ? out[(y - 1) * stride + x - channels]! : 0;
      const predictor = [
        0,
        left,
        up,
        (left + up) >> 1,
        (() => {
          const p = left + up - upLeft;
          const [pa, pb, pc] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - upLeft)];
          return pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
        })(),
      ][filter]!;
      out[y * stride + x] = (value + predictor) & 0xff;
    }
  }
  return {
    width,
    height,
    pixel: (x, y) => [...out.subarray(y * stride + x * channels, y * stride + x * channels + 3)],
  };
}

const isBar = ([r, g, b]: number[]) =>
  Math.abs(r! - BAR.r) <= 8 && Math.abs(g! - BAR.g) <= 8 && Math.abs(b! - BAR.b) <= 8;

describe('the cockpit on the plain pilot page', () => {
  it('shows both cameras at their aspect ratio, switches between them, shows the sensors, loads the SIMD FEC kernel with no CSP violation', async () => {
    const [frontPort, rearPort, sensor] = [await freeUdpPort(), await freeUdpPort(), await t.robotProgram()];
    const sensorPort = await freeUdpPort();
    const robot = await t.fleet.robot('cockpit-view', [
      ...videoLines('front', frontPort),
      ...videoLines('rear', rearPort),
      '[[channel]]',
      'kind = "sensor"',
      'name = "imu"',
      `input = "udp://127.0.0.1:${sensorPort}"`,
      'codec = "json"',
    ]);
    t.defer(() => robot.remove());
    // A 4:3 camera and a 16:9 camera.
    const front = ffmpegRtpSource({ codec: 'h264', port: frontPort, frames: 3000, width: 320, height: 240 });
    const rear = ffmpegRtpSource({ codec: 'h264', port: rearPort, frames: 3000, width: 640, height: 360 });
    t.defer(() => front.stop());
    t.defer(() => rear.stop());

    const { page, console } = await openPage(
      `robot=cockpit-view&token=${encodeURIComponent(await robot.token('drive'))}`,
    );
    await page.addStyleTag({
      content: `svc-pilot { --svc-video-background: rgb(${BAR.r}, ${BAR.g}, ${BAR.b}); }`,
    });
    await page.locator('svc-pilot .state', { hasText: 'connected' }).waitFor({ timeout: 30_000 });
    await expect.poll(() => painted(page, 'front'), { timeout: 30_000 }).toBeGreaterThan(10);

    // The 4:3 picture in the 16:9 element: bars left and right, of the width the ratio leaves.
    const video = page.locator('svc-video[data-name="front"]');
    const shot = decodePng(await video.screenshot());
    const row = Math.floor(shot.height / 2);
    // Bar pixels on each half of the middle row (the element's edge pixel may be blended).
    const barPixels = (from: number, to: number) => {
      let count = 0;
      for (let x = from; x < to; x++) if (isBar(shot.pixel(x, row))) count++;
      return count;
    };
    const bar = barPixels(0, shot.width / 2);
    const right = barPixels(shot.width / 2, shot.width);
    const expected = (shot.width - (shot.height * 4) / 3) / 2;
    expect(Math.abs(bar - expected)).toBeLessThanOrEqual(3);
    expect(Math.abs(right - expected)).toBeLessThanOrEqual(3);
    // Above and below the picture there is no bar: it fills the height.
    expect(isBar(shot.pixel(Math.floor(shot.width / 2), 1))).toBe(false);
    expect(await page.locator('svc-pilot dd[data-key="resolution"]').textContent()).toBe('320×240');

    // The other camera: chosen in the selector, shown alone, and the HUD follows it.
    await page.getByLabel('Camera', { exact: true }).selectOption({ label: 'rear' });
    await expect.poll(() => video.isVisible()).toBe(false);
    await page.locator('svc-video[data-name="rear"]').waitFor({ state: 'visible' });
    await page
      .locator('svc-pilot dd[data-key="resolution"]', { hasText: '640×360' })
      .waitFor({ timeout: 10_000 });
    // Side by side: both.
    await page.getByLabel('Side by side').check();
    await video.waitFor({ state: 'visible' });

    // The sensor panel: a JSON message pretty-printed, then a binary one as hex.
    const send = (bytes: Buffer) =>
      new Promise<void>((resolve, reject) =>
        sensor.socket.send(bytes, sensorPort, '127.0.0.1', (err) => (err ? reject(err) : resolve())),
      );
    await send(Buffer.from(JSON.stringify({ yaw: 1.5, ok: true })));
    const imu = page.locator('svc-pilot section[data-name="imu"] pre');
    await imu.filter({ hasText: '"yaw": 1.5' }).waitFor({ timeout: 10_000 });
    expect(await imu.textContent()).toBe('{\n  "yaw": 1.5,\n  "ok": true\n}');
    await send(Buffer.from([0x00, 0x01, 0xfe, 0xff]));
    await imu.filter({ hasText: '00 01 fe ff' }).waitFor({ timeout: 10_000 });
    expect(await page.locator('svc-pilot section[data-name="imu"] .meta').textContent()).toMatch(
      /msg\/s .* ago · 4 bytes/,
    );

    // WebAssembly compiled under the page's policy, and nothing was refused.
    await page.locator('svc-pilot dd[data-key="fec"]', { hasText: 'simd' }).waitFor({ timeout: 10_000 });
    expect(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations)).toEqual(
      [],
    );
    expect(console.filter((line) => /Content.Security.Policy|unsafe-eval/i.test(line))).toEqual([]);
  });

  it('drives with the keyboard and a gamepad at a fixed rate, sends one zero command on release and on blur, and the stop button always', async () => {
    const port = await freeUdpPort();
    const motors = await t.robotProgram();
    const robot = await t.fleet.robot('cockpit-drive', [
      ...videoLines('front', port),
      '[[channel]]',
      'kind = "command"',
      'name = "drive"',
      `output = "udp://127.0.0.1:${motors.port}"`,
      'codec = "json"',
    ]);
    t.defer(() => robot.remove());
    const source = ffmpegRtpSource({ codec: 'h264', port, frames: 3000 });
    t.defer(() => source.stop());

    const { page } = await openPage(
      `robot=cockpit-drive&token=${encodeURIComponent(await robot.token('drive'))}`,
    );
    await page.locator('svc-pilot .state', { hasText: 'connected' }).waitFor({ timeout: 30_000 });
    await page.locator('svc-pilot dd[data-key="role"]', { hasText: 'driver' }).waitFor({ timeout: 10_000 });
    await expect.poll(() => painted(page, 'front'), { timeout: 30_000 }).toBeGreaterThan(5);
    const received = () => motors.received.map((m) => JSON.parse(m) as Record<string, unknown>);
    const sentByPage = () => page.evaluate(() => (window as unknown as { __commands: string[] }).__commands);
    /** Lets the page run for `frames` more painted frames: time for commands that should not come. */
    const letFramesPass = async (frames: number) => {
      const from = await painted(page, 'front');
      await expect
        .poll(() => painted(page, 'front'), { timeout: 10_000 })
        .toBeGreaterThanOrEqual(from + frames);
    };

    // Keyboard: drive commands while held, then one zero command.
    await page.keyboard.down('ArrowUp');
    await expect.poll(() => received().length, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    await page.keyboard.up('ArrowUp');
    await expect
      .poll(() => received().at(-1), { timeout: 10_000 })
      .toMatchObject({ v: 1, type: 'drive', linear: 0, angular: 0 });
    expect(received()[0]).toMatchObject({ v: 1, type: 'drive', linear: 0.5, angular: 0 });
    const afterRelease = received().length;
    await letFramesPass(15);
    expect(received().length).toBe(afterRelease);

    // Gamepad (standard mapping): stick forward and left; a stick inside the dead zone is rest.
    await page.evaluate(() => {
      (window as unknown as { __pad: unknown }).__pad = { axes: [-1, -1, 0, 0], buttons: [] };
    });
    await expect
      .poll(() => received().at(-1), { timeout: 10_000 })
      .toMatchObject({ type: 'drive', linear: 1, angular: 1 });
    await page.evaluate(() => {
      (window as unknown as { __pad: unknown }).__pad = { axes: [0.1, -0.1, 0, 0], buttons: [] };
    });
    await expect.poll(() => received().at(-1), { timeout: 10_000 }).toMatchObject({ linear: 0, angular: 0 });
    const afterStick = received().length;
    await letFramesPass(15);
    expect(received().length).toBe(afterStick);

    // The window loses focus while a key is held: one zero command, then nothing.
    await page.keyboard.down('d');
    await expect
      .poll(() => received().at(-1), { timeout: 10_000 })
      .toMatchObject({ linear: 0, angular: -0.5 });
    await page.evaluate(() => window.dispatchEvent(new Event('blur')));
    await expect.poll(() => received().at(-1), { timeout: 10_000 }).toMatchObject({ linear: 0, angular: 0 });
    const afterBlur = received().length;
    await letFramesPass(15);
    expect(received().length).toBe(afterBlur);
    await page.keyboard.up('d');

    // The stop button.
    await page.getByRole('button', { name: 'Stop the robot' }).click();
    await expect.poll(() => received().at(-1), { timeout: 10_000 }).toMatchObject({ v: 1, type: 'stop' });

    // What reached the robot's port is byte for byte what the page sent, in order, every seq once.
    const sent = await sentByPage();
    expect(motors.received).toEqual(sent);
    const seqs = received().map((c) => c.seq as number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });

  it('says what happened and what to do for each refusal it can meet', async () => {
    const allowed = await t.fleet.robot('cockpit-allowed', []);
    t.defer(() => allowed.remove());
    const other = await t.fleet.robot('cockpit-other', []);
    t.defer(() => other.remove());
    const refusalOf = async (page: Page) => {
      const box = page.locator('svc-pilot .refusal');
      await box.waitFor({ state: 'visible', timeout: 30_000 });
      return { code: await box.getAttribute('data-code'), text: (await box.textContent()) ?? '' };
    };

    // A token for another robot: no access.
    const wrong = await openPage(
      `robot=cockpit-other&token=${encodeURIComponent(await allowed.token('drive'))}`,
    );
    const noAccess = await refusalOf(wrong.page);
    expect(noAccess.code).toBe('no-access');
    expect(noAccess.text).toMatch(/no access to this robot.*grant/);

    // A token whose signature does not verify (what an expired one also meets): get a new one.
    const [header, payload, signature] = (await allowed.token('drive')).split('.') as [
      string,
      string,
      string,
    ];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forged = [
      header,
      Buffer.from(JSON.stringify({ ...claims, sub: 'user:mallory' })).toString('base64url'),
      signature,
    ].join('.');
    const refused = await openPage(`robot=cockpit-allowed&token=${encodeURIComponent(forged)}`);
    const badToken = await refusalOf(refused.page);
    expect(badToken.code).toBe('bad-token');
    expect(badToken.text).toMatch(/expired or is not valid.*new link/);
    await refused.page.locator('svc-pilot .state', { hasText: /denied|closed/ }).waitFor();

    // Signed in to the console in this tab, a robot that does not exist: the mint answers 404.
    const signedIn = async (context: BrowserContext) => {
      await context.addInitScript(
        (accessToken) => sessionStorage.setItem('svc.tokens', JSON.stringify({ accessToken, idToken: '' })),
        t.fleet.alice.accessToken,
      );
    };
    const unknown = await openPage('robot=no-such-robot', signedIn);
    const unknownRobot = await refusalOf(unknown.page);
    expect(unknownRobot.code).toBe('unknown-robot');
    expect(unknownRobot.text).toMatch(/no such robot.*Check the robot id/);
    // Final: the page stops trying.
    await unknown.page.locator('svc-pilot .state', { hasText: /closed|denied/ }).waitFor({ timeout: 10_000 });

    // Neither a token nor a sign-in.
    const none = await openPage('robot=cockpit-allowed');
    expect((await refusalOf(none.page)).code).toBe('no-token');

    // Someone else drives: a second drive link watches, and says so.
    const driver = await openPage(
      `robot=cockpit-allowed&token=${encodeURIComponent(await allowed.token('drive'))}`,
    );
    await driver.page.locator('svc-pilot .state', { hasText: 'connected' }).waitFor({ timeout: 30_000 });
    const second = await openPage(
      `robot=cockpit-allowed&token=${encodeURIComponent(await allowed.token('drive'))}`,
    );
    const held = await refusalOf(second.page);
    expect(held.code).toBe('slot-taken');
    expect(held.text).toMatch(/Someone else is driving.*watching as an observer.*hand over/);
    // Not final: the watching page stays connected.
    await second.page.locator('svc-pilot .state', { hasText: 'connected' }).waitFor({ timeout: 10_000 });

    // The robot goes away: a page opened now says it is offline, and keeps trying.
    const token = await allowed.token('drive');
    await driver.context.close();
    await second.context.close();
    await allowed.daemon.stop();
    const offline = await openPage(`robot=cockpit-allowed&token=${encodeURIComponent(token)}`);
    const gone = await refusalOf(offline.page);
    expect(gone.code).toBe('robot-offline');
    expect(gone.text).toMatch(/robot is offline.*keeps trying/);
    // Not final: the box says the page keeps trying, and it still does a few seconds later.
    const box = offline.page.locator('svc-pilot .refusal');
    expect(await box.getAttribute('data-final')).toBe('false');
    await offline.page.waitForTimeout(3000);
    expect(await box.getAttribute('data-code')).toBe('robot-offline');
    expect(await offline.page.locator('svc-pilot .state').textContent()).not.toMatch(/closed|denied/);
    // Back: the page connects by itself and the message goes.
    await allowed.restart();
    await offline.page.locator('svc-pilot .state', { hasText: 'connected' }).waitFor({ timeout: 30_000 });
    await box.waitFor({ state: 'hidden', timeout: 5_000 });
  });
});
