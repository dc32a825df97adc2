import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS, ConfigError, loadConfig, parseConfig } from '../src/config.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const AGENT = '[agent]\nrobot_id = "r1"\nsignal_url = "wss://cloud.example/ws"\n';

function issuesOf(text: string, env: Record<string, string> = {}): string[] {
  try {
    parseConfig(text, 'svcd.toml', env);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => i.message);
    throw err;
  }
  throw new Error('the configuration was accepted');
}

describe('daemon configuration', () => {
  it('reads the example file with every key of the specification', async () => {
    const config = await loadConfig(path.join(here, '../svcd.example.toml'), {});
    expect(config.agent).toMatchObject({
      robot_id: 'rover-7',
      quic_port: 4433,
      qos_profile: 'balanced',
      relay: true,
    });
    expect(config.channels.map((c) => [c.id, c.kind, c.name])).toEqual([
      [1, 'video', 'front'],
      [2, 'sensor', 'imu'],
      [3, 'command', 'drive'],
    ]);
    expect(config.channels[1]).toMatchObject({ address: { host: '127.0.0.1', port: 9100 } });
    expect(config.publisherControl).toEqual({ host: '127.0.0.1', port: 9300 });
    expect(Object.isFrozen(config.channels[0])).toBe(true);
  });

  it('fills the defaults in one place', () => {
    const config = parseConfig(AGENT);
    expect(config.agent).toMatchObject(AGENT_DEFAULTS);
    expect(config.channels).toEqual([]);
  });

  it('names the key, the value and what was expected', () => {
    expect(issuesOf(`${AGENT}quic_port = 70000\nqos_profile = "fast"\nipv6 = "yes"\n`)).toEqual([
      'agent.quic_port = 70000: expected an integer in 1..65535',
      'agent.ipv6 = "yes": expected true or false',
      'agent.qos_profile = "fast": expected one of latency, balanced, quality',
    ]);
    expect(issuesOf('[agent]\nrobot_id = "r1"\n')).toEqual([
      'agent.signal_url is missing: expected a wss://<host>/ws URL',
    ]);
  });

  it('rejects unknown keys with a suggestion', () => {
    expect(issuesOf(`${AGENT}quic_prot = 4433\n`)).toEqual([
      'unknown key agent.quic_prot; did you mean quic_port?',
    ]);
    expect(
      issuesOf(
        `${AGENT}[[channel]]\nkind = "video"\nname = "v"\ninput = "rtp://127.0.0.1:5004"\ncodec = "avc1.42e01f"\nfps = 30\nmax_bitrate = 1\n`,
      ),
    ).toEqual(['unknown key channel[0].max_bitrate; did you mean max_bitrate_kbps?']);
    expect(issuesOf(`${AGENT}[publisher]\nudp = "127.0.0.1:1"\n`)[0]).toMatch(
      /^unknown key publisher; did you mean publisher_control\?/,
    );
  });

  it('refuses a bare rtp:// Motion JPEG channel when the config is loaded, and names RTSP as the way', () => {
    const [issue] = issuesOf(
      `${AGENT}[[channel]]\nkind = "video"\nname = "cam"\ninput = "rtp://0.0.0.0:5004"\ncodec = "mjpeg"\nfps = 15\n`,
    );
    expect(issue).toMatch(
      /^channel\[0\]\.input = "rtp:\/\/0\.0\.0\.0:5004": Motion JPEG cannot be taken from a bare rtp:\/\/ input/,
    );
    expect(issue).toContain('input = "rtsp://..."');
  });

  it('warns about Motion JPEG over RTSP, checks codecs, and redacts credentials in messages', () => {
    const config = parseConfig(
      `${AGENT}[[channel]]\nkind = "video"\nname = "cam"\ninput = "rtsp://10.0.0.2/m"\ncodec = "mjpeg"\nfps = 15\n`,
    );
    expect(config.warnings[0]).toMatch(/Motion JPEG uses several times the bandwidth/);
    const issues = issuesOf(
      `${AGENT}[[channel]]\nkind = "video"\nname = "cam"\ninput = "rtsp://u:hunter2@10.0.0.2/m"\ncodec = "h264"\nfps = 15\n`,
    );
    expect(issues).toEqual([
      expect.stringMatching(/^channel\[0\]\.codec = "h264": codec "h264" is not one this service carries/),
    ]);
    const badUrl = issuesOf(
      `${AGENT}[[channel]]\nkind = "video"\nname = "cam"\ninput = "http://u:hunter2@10.0.0.2/m"\ncodec = "avc1.42e01f"\nfps = 15\n`,
    );
    expect(badUrl.join()).toContain('http://***@10.0.0.2/m');
    expect(badUrl.join()).not.toContain('hunter2');
  });

  it('checks sensor, command and publisher-control addresses, and unique names', () => {
    const issues = issuesOf(
      `${AGENT}[[channel]]\nkind = "sensor"\nname = "a"\ninput = "127.0.0.1:9"\ncodec = "json"\n` +
        `[[channel]]\nkind = "command"\nname = "a"\noutput = "udp://127.0.0.1:9"\ncodec = "xml"\n` +
        `[[channel]]\nkind = "lidar"\nname = "c"\n[publisher_control]\nudp = "127.0.0.1"\n`,
    );
    expect(issues).toEqual([
      'channel[0].input = "127.0.0.1:9": expected a udp://<address>:<port> URL to listen on',
      'channel[1].codec = "xml": expected json',
      'channel[2].kind = "lidar": expected a channel with kind = "video", "sensor" or "command"',
      'publisher_control.udp = "127.0.0.1": expected an <address>:<port> to send publisher-control datagrams to',
    ]);
  });

  it('lets SVC_ENROLMENT_TOKEN win over enrolment_token', () => {
    const text = `${AGENT}enrolment_token = "svc_enr_fromfile"\n`;
    expect(parseConfig(text).agent.enrolment_token).toBe('svc_enr_fromfile');
    expect(
      parseConfig(text, 'svcd.toml', { SVC_ENROLMENT_TOKEN: 'svc_enr_fromenv' }).agent.enrolment_token,
    ).toBe('svc_enr_fromenv');
  });

  describe('simulcast layers', () => {
    const channel = (...lines: string[]) =>
      `${AGENT}[[channel]]\nkind = "video"\nname = "front"\ncodec = "avc1.42e01f"\nfps = 30\n${lines.join('\n')}\n`;
    const layer = (name: string, port: number, minKbps?: number) =>
      `[[channel.layer]]\nname = "${name}"\ninput = "rtp://127.0.0.1:${port}"${minKbps === undefined ? '' : `\nmin_bitrate_kbps = ${minKbps}`}`;

    it('takes every input from the layers, lowest first, with the channel input absent', () => {
      const config = parseConfig(channel(layer('low', 5004), layer('high', 5006, 1500)));
      expect(config.channels[0]).toMatchObject({
        kind: 'video',
        layer: [
          { name: 'low', input: 'rtp://127.0.0.1:5004', min_bitrate_kbps: 0 },
          { name: 'high', input: 'rtp://127.0.0.1:5006', min_bitrate_kbps: 1500 },
        ],
      });
      expect(config.channels[0]).not.toHaveProperty('input');
    });

    it('refuses a channel input next to layers, and a channel with neither, naming the fix', () => {
      expect(
        issuesOf(channel('input = "rtp://127.0.0.1:5000"', layer('low', 5004), layer('high', 5006, 900))),
      ).toEqual([
        `channel[0].input = "rtp://127.0.0.1:5000": a channel with [[channel.layer]] takes its video from the layers' inputs; remove input from the channel (or remove the layers for a single stream)`,
      ]);
      expect(issuesOf(channel())).toEqual([
        'channel[0].input is missing: expected an rtsp:// or rtp:// URL (or [[channel.layer]] tables with an input each, for simulcast)',
      ]);
    });

    it('needs two layers or more, declared lowest first, with unique names and inputs', () => {
      expect(issuesOf(channel(layer('only', 5004)))).toEqual([
        'channel[0].layer has 1 table: simulcast needs at least 2 layers; for a single stream set input on the channel and remove [[channel.layer]]',
      ]);
      expect(issuesOf(channel(layer('high', 5004, 2000), layer('low', 5006, 300)))).toEqual([
        'channel[0].layer[1].min_bitrate_kbps = 300: below channel[0].layer[0] ("high", 2000); declare layers lowest first (min_bitrate_kbps never decreasing)',
      ]);
      expect(issuesOf(channel(layer('a', 5004), layer('a', 5004, 500)))).toEqual([
        'channel[0].layer[1].name = "a": already used by channel[0].layer[0]; layer names must be unique',
        'channel[0].layer[1].input = "rtp://127.0.0.1:5004": already the input of channel[0].layer[0]; each layer needs its own stream',
      ]);
    });

    it('checks each layer input like a channel input, against the channel codec', () => {
      const mjpeg = channel(layer('low', 5004), layer('high', 5006, 900)).replace('avc1.42e01f', 'mjpeg');
      const issues = issuesOf(mjpeg);
      expect(issues).toHaveLength(2);
      expect(issues[0]).toMatch(
        /^channel\[0\]\.layer\[0\]\.input = "rtp:\/\/127\.0\.0\.1:5004": Motion JPEG cannot be taken from a bare rtp:\/\/ input/,
      );
      expect(issues[1]).toMatch(/^channel\[0\]\.layer\[1\]\.input = /);
      expect(
        issuesOf(channel(layer('low', 5004), layer('high', 5006)).replace('avc1.42e01f', 'vp8')),
      ).toEqual([expect.stringMatching(/^channel\[0\]\.codec = "vp8": /)]);
      expect(
        issuesOf(
          channel(layer('low', 5004), '[[channel.layer]]\nname = "high"\ninput = "udp://127.0.0.1:5006"'),
        ),
      ).toEqual([
        expect.stringMatching(
          /^channel\[0\]\.layer\[1\]\.input = "udp:\/\/127\.0\.0\.1:5006": video input must be/,
        ),
      ]);
      expect(issuesOf(channel(layer('low', 5004), `${layer('high', 5006)}\nmin_bitrate = 9`))).toEqual([
        'unknown key channel[0].layer[1].min_bitrate; did you mean min_bitrate_kbps?',
      ]);
    });
  });

  it('reports TOML syntax errors with their position', () => {
    expect(issuesOf('[agent\nrobot_id = 1')[0]).toMatch(/^not valid TOML at line 1, column \d+/);
  });
});

describe('svcd check-config', () => {
  const svcd = path.resolve(here, '../bin/svcd');
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svcd-config-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints the channels of a good file and every problem of a bad one', async () => {
    const good = await promisify(execFile)(svcd, [
      'check-config',
      '--config',
      path.join(here, '../svcd.example.toml'),
    ]);
    expect(good.stdout).toContain(
      'channel 1 video "front" <- rtsp://192.0.2.10:554/stream1 avc1.42e01f 30 fps',
    );
    const layered = path.join(dir, 'layered.toml');
    await writeFile(
      layered,
      `${AGENT}[[channel]]\nkind = "video"\nname = "front"\ncodec = "avc1.42e01f"\nfps = 30\n` +
        `[[channel.layer]]\nname = "low"\ninput = "rtp://127.0.0.1:5004"\n` +
        `[[channel.layer]]\nname = "high"\ninput = "rtsp://u:hunter2@192.0.2.10/hd"\nmin_bitrate_kbps = 1500\n`,
    );
    const simulcast = await promisify(execFile)(svcd, ['check-config', '--config', layered]);
    expect(simulcast.stdout).toContain(
      [
        '  channel 1 video "front" avc1.42e01f 30 fps, simulcast: 2 layers, one forwarded at a time',
        '    layer 0 "low" <- rtp://127.0.0.1:5004 from 0 kbit/s',
        '    layer 1 "high" <- rtsp://***@192.0.2.10/hd from 1500 kbit/s',
      ].join('\n'),
    );
    const bad = path.join(dir, 'bad.toml');
    const example = await readFile(path.join(here, '../svcd.example.toml'), 'utf8');
    await writeFile(
      bad,
      example
        .replace('codec = "avc1.42e01f"', 'codec = "mjpeg"')
        .replace('rtsp://192.0.2.10:554/stream1', 'rtp://0.0.0.0:5004'),
    );
    const failure = await promisify(execFile)(svcd, ['check-config', '--config', bad]).catch(
      (e: unknown) => e as { code: number; stderr: string },
    );
    expect(failure).toMatchObject({ code: 1 });
    expect((failure as { stderr: string }).stderr).toMatch(
      /error: invalid configuration .*bad\.toml: channel\[0\]\.input = "rtp:\/\/0\.0\.0\.0:5004": Motion JPEG/,
    );
  });
});
