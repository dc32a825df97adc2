import { readFile } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import { checkVideoInput, isMediaError, MJPEG_BANDWIDTH_WARNING } from '@svc/media';
import { DEFAULT_QOS_PROFILE, QOS_PROFILE_NAMES } from '@svc/qos';
import { CodedError, codedErrorGuard, redactUrl } from '@svc/runtime';
import { ROBOT_ID_PATTERN } from '@svc/wire';
import { parse as parseToml, TomlError } from 'smol-toml';
import { z } from 'zod';
import { PORT_MAPPING_PROTOCOLS } from './port-mapping/gateway-client.js';

/** One problem in a configuration file: the key, the value found, and what was expected. */
export interface ConfigIssue {
  /** Dotted key, e.g. `agent.quic_port` or `channel[1].input`. */
  readonly key: string;
  readonly message: string;
}

/** The code of {@link ConfigError}: `invalid-config`, whatever the problems. */
export type ConfigErrorCode = 'invalid-config';

/** A configuration that cannot be used; `issues` lists every problem, not just the first. */
export class ConfigError extends CodedError<ConfigErrorCode> {
  override readonly name = 'ConfigError';
  readonly issues: readonly ConfigIssue[];

  constructor(file: string, issues: readonly ConfigIssue[], options?: { cause?: unknown }) {
    super('invalid-config', `${file}: ${issues.map((i) => i.message).join('\n  ')}`, options);
    this.issues = issues;
  }
}

/** True when `err` is a {@link ConfigError}. */
export const isConfigError = codedErrorGuard(ConfigError);

/** Defaults of the `[agent]` keys the specification leaves optional, in one place. */
export const AGENT_DEFAULTS = {
  credential_path: '/var/lib/svcd/credential',
  quic_port: 4433,
  ipv6: false,
  port_mapping: false,
  /** With `port_mapping`: the protocols asked, in this order (ADR 0020). */
  port_mapping_protocols: PORT_MAPPING_PROTOCOLS,
  /** With `port_mapping`: the lease asked of the gateway, in seconds; renewed at half. */
  port_mapping_lifetime_s: 3600,
  qos_profile: DEFAULT_QOS_PROFILE,
  max_sessions: 4,
  relay: false,
  recovery_ladder: true,
  /** A command older than this (by its send time on the robot's clock) is dropped (docs/safety.md). */
  max_command_age_ms: 500,
  /** The driver sent no command this long: publisher control hears `driver-idle`. */
  command_timeout_ms: 1000,
  /** The driver slot is kept this long for the same user after the driver's session ends. */
  driver_grace_ms: 5000,
} as const;

const int = (min: number, max: number) => {
  const expected = `an integer in ${min}..${max}`;
  return z
    .number({ error: expected })
    .int({ error: expected })
    .min(min, { error: expected })
    .max(max, { error: expected });
};
const bool = () => z.boolean({ error: 'true or false' });
const text = (expected: string) => z.string({ error: expected }).min(1, { error: expected });
/** `udp://<address>:<port>` (sensor and command channels). */
const udpUrl = (expected: string) =>
  text(expected).refine((v) => v.startsWith('udp://') && parseUdpAddress(v.slice(6)) !== undefined, {
    error: expected,
  });
/** `<address>:<port>` (publisher control). */
const udpAddress = (expected: string) =>
  text(expected).refine((v) => parseUdpAddress(v) !== undefined, { error: expected });

const PROTOCOL_CHOICE = PORT_MAPPING_PROTOCOLS.map((p) => `"${p}"`).join(' or ');

const agentSchema = z
  .object({
    robot_id: text('a non-empty robot identifier').regex(ROBOT_ID_PATTERN, {
      error: 'letters, digits, ".", "_" or "-", starting with a letter or digit, at most 128 characters',
    }),
    signal_url: text('a wss://<host>/ws URL').refine(isSignalUrl, {
      error: 'a wss://<host>/ws URL (ws:// only for localhost)',
    }),
    credential_path: text('a file path').default(AGENT_DEFAULTS.credential_path),
    quic_port: int(1, 65535).default(AGENT_DEFAULTS.quic_port),
    ipv6: bool().default(AGENT_DEFAULTS.ipv6),
    port_mapping: bool().default(AGENT_DEFAULTS.port_mapping),
    port_mapping_protocols: z
      .array(z.enum(PORT_MAPPING_PROTOCOLS, { error: PROTOCOL_CHOICE }), {
        error: `an array of ${PROTOCOL_CHOICE}, asked in that order`,
      })
      .min(1, { error: `at least one of ${PROTOCOL_CHOICE}` })
      .refine((list) => new Set(list).size === list.length, { error: 'each protocol at most once' })
      .default(() => [...AGENT_DEFAULTS.port_mapping_protocols]),
    port_mapping_lifetime_s: int(10, 86_400).default(AGENT_DEFAULTS.port_mapping_lifetime_s),
    port_mapping_gateway: text('an IPv4 address (the gateway to ask)')
      .refine((value) => isIPv4(value), { error: 'an IPv4 address (the gateway to ask), e.g. 192.168.1.1' })
      .optional(),
    qos_profile: z
      .enum(QOS_PROFILE_NAMES, { error: `one of ${QOS_PROFILE_NAMES.join(', ')}` })
      .default(AGENT_DEFAULTS.qos_profile),
    max_sessions: int(1, 64).default(AGENT_DEFAULTS.max_sessions),
    relay: bool().default(AGENT_DEFAULTS.relay),
    enrolment_token: text('an enrolment token starting with svc_enr_')
      .regex(/^svc_enr_\S+$/, { error: 'an enrolment token starting with svc_enr_' })
      .optional(),
    recovery_ladder: bool().default(AGENT_DEFAULTS.recovery_ladder),
    max_command_age_ms: int(20, 60_000).default(AGENT_DEFAULTS.max_command_age_ms),
    command_timeout_ms: int(100, 3_600_000).default(AGENT_DEFAULTS.command_timeout_ms),
    driver_grace_ms: int(0, 600_000).default(AGENT_DEFAULTS.driver_grace_ms),
  })
  .strict();

/** Most `[[channel.layer]]` entries of one channel. */
export const MAX_LAYERS = 16;

const layerSchema = z
  .object({
    name: text('a layer name'),
    input: text('an rtsp:// or rtp:// URL'),
    min_bitrate_kbps: int(0, 1_000_000).default(0),
  })
  .strict();

const videoSchema = z
  .object({
    kind: z.literal('video'),
    name: text('a channel name'),
    // Required without layers, absent with them: checked in `finish`.
    input: text('an rtsp:// or rtp:// URL').optional(),
    codec: text('a WebCodecs codec string: avc1.<6 hex digits>, hev1.<...>, hvc1.<...> or mjpeg'),
    fps: int(1, 240),
    max_bitrate_kbps: int(0, 1_000_000).default(0),
    layer: z
      .array(layerSchema, { error: 'an array of [[channel.layer]] tables' })
      .max(MAX_LAYERS, { error: `at most ${MAX_LAYERS} [[channel.layer]] tables` })
      .default([]),
  })
  .strict();

const sensorSchema = z
  .object({
    kind: z.literal('sensor'),
    name: text('a channel name'),
    input: udpUrl('a udp://<address>:<port> URL to listen on'),
    codec: z.literal('json', { error: 'json' }),
  })
  .strict();

const commandSchema = z
  .object({
    kind: z.literal('command'),
    name: text('a channel name'),
    output: udpUrl('a udp://<address>:<port> URL to send commands to'),
    codec: z.literal('json', { error: 'json' }),
  })
  .strict();

const channelSchema = z.discriminatedUnion('kind', [videoSchema, sensorSchema, commandSchema], {
  error: 'a channel with kind = "video", "sensor" or "command"',
});

const fileSchema = z
  .object({
    agent: agentSchema,
    channel: z.array(channelSchema, { error: 'an array of [[channel]] tables' }).max(255).default([]),
    publisher_control: z
      .object({ udp: udpAddress('an <address>:<port> to send publisher-control datagrams to') })
      .strict()
      .optional(),
  })
  .strict();

type FileConfig = z.infer<typeof fileSchema>;

/** A UDP address. */
export interface UdpAddress {
  readonly host: string;
  readonly port: number;
}

/** The agent section after defaults. */
export type AgentConfig = Readonly<z.infer<typeof agentSchema>>;
/** One simulcast layer of a video channel (`[[channel.layer]]`). */
export type VideoLayerConfig = Readonly<z.infer<typeof layerSchema>>;
/**
 * A video channel, with the wire channel id it is sent on. `input` is there exactly when `layer`
 * is empty; with layers (at least two, lowest `min_bitrate_kbps` first) every input is a layer's.
 */
export type VideoChannelConfig = Readonly<z.infer<typeof videoSchema> & { id: number }>;
/** A sensor channel. */
export type SensorChannelConfig = Readonly<
  z.infer<typeof sensorSchema> & { id: number; address: UdpAddress }
>;
/** A command channel. */
export type CommandChannelConfig = Readonly<
  z.infer<typeof commandSchema> & { id: number; address: UdpAddress }
>;
/** Any channel. */
export type ChannelConfig = VideoChannelConfig | SensorChannelConfig | CommandChannelConfig;

/** A validated, frozen daemon configuration. */
export interface DaemonConfig {
  readonly agent: AgentConfig;
  readonly channels: readonly ChannelConfig[];
  readonly publisherControl: UdpAddress | undefined;
  /** Warnings to log at start (e.g. Motion JPEG bandwidth). */
  readonly warnings: readonly string[];
}

/** Reads and validates `svcd.toml`; `SVC_ENROLMENT_TOKEN` in `env` wins over `enrolment_token`. */
export async function loadConfig(
  file: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<DaemonConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(
      file,
      [{ key: '', message: code === 'ENOENT' ? 'no such file' : `cannot read: ${(err as Error).message}` }],
      { cause: err },
    );
  }
  return parseConfig(text, file, env);
}

/** Validates configuration text; see {@link loadConfig}. */
export function parseConfig(
  text: string,
  file = 'svcd.toml',
  env: Readonly<Record<string, string | undefined>> = {},
): DaemonConfig {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (err) {
    const where = err instanceof TomlError ? ` at line ${err.line}, column ${err.column}` : '';
    throw new ConfigError(file, [
      { key: '', message: `not valid TOML${where}: ${firstLine((err as Error).message)}` },
    ]);
  }
  const result = fileSchema.safeParse(raw, { reportInput: true });
  if (!result.success)
    throw new ConfigError(
      file,
      result.error.issues.map((issue) => describeIssue(issue, raw)),
    );
  const issues: ConfigIssue[] = [];
  const config = finish(result.data, env, issues);
  if (issues.length > 0) throw new ConfigError(file, issues);
  return deepFreeze(config);
}

function finish(
  data: FileConfig,
  env: Readonly<Record<string, string | undefined>>,
  issues: ConfigIssue[],
): DaemonConfig {
  const warnings: string[] = [];
  const names = new Map<string, number>();
  const channels = data.channel.map((channel, index): ChannelConfig => {
    const key = `channel[${index}]`;
    const seen = names.get(channel.name);
    if (seen !== undefined)
      issues.push({
        key: `${key}.name`,
        message: `${key}.name = "${channel.name}": already used by channel[${seen}]; names must be unique`,
      });
    names.set(channel.name, index);
    const id = index + 1;
    if (channel.kind === 'video') {
      const inputs = checkLayers(channel, key, issues);
      for (const [input, where] of inputs) {
        try {
          checkVideoInput(input, channel.codec);
        } catch (err) {
          if (!isMediaError(err)) throw err;
          const field = err.code === 'bad-codec' ? `${key}.codec` : where;
          const value = err.code === 'bad-codec' ? channel.codec : redactUrl(input);
          const message = `${field} = "${value}": ${err.message}`;
          // A codec problem is the same for every layer: say it once.
          if (!issues.some((issue) => issue.message === message)) issues.push({ key: field, message });
        }
      }
      if (channel.codec === 'mjpeg') warnings.push(`${key} "${channel.name}": ${MJPEG_BANDWIDTH_WARNING}`);
      return { ...channel, id };
    }
    const url = channel.kind === 'sensor' ? channel.input : channel.output;
    return { ...channel, id, address: parseUdpAddress(url.slice('udp://'.length))! };
  });
  const token = env.SVC_ENROLMENT_TOKEN;
  const agent = token !== undefined && token !== '' ? { ...data.agent, enrolment_token: token } : data.agent;
  const publisherControl =
    data.publisher_control === undefined ? undefined : parseUdpAddress(data.publisher_control.udp);
  return { agent, channels, publisherControl, warnings };
}

/**
 * The layer rules of a video channel (issues go to `issues`): with `[[channel.layer]]` every input
 * is a layer's, so the channel has no `input`; at least two layers, declared lowest first, with
 * unique names and inputs. Returns each input to check with the key it sits at.
 */
function checkLayers(
  channel: z.infer<typeof videoSchema>,
  key: string,
  issues: ConfigIssue[],
): (readonly [input: string, where: string])[] {
  const { layer: layers } = channel;
  if (layers.length === 0) {
    if (channel.input !== undefined) return [[channel.input, `${key}.input`]];
    issues.push({
      key: `${key}.input`,
      message: `${key}.input is missing: expected an rtsp:// or rtp:// URL (or [[channel.layer]] tables with an input each, for simulcast)`,
    });
    return [];
  }
  if (channel.input !== undefined)
    issues.push({
      key: `${key}.input`,
      message: `${key}.input = ${formatValue('input', channel.input)}: a channel with [[channel.layer]] takes its video from the layers' inputs; remove input from the channel (or remove the layers for a single stream)`,
    });
  if (layers.length === 1)
    issues.push({
      key: `${key}.layer`,
      message: `${key}.layer has 1 table: simulcast needs at least 2 layers; for a single stream set input on the channel and remove [[channel.layer]]`,
    });
  const names = new Map<string, number>();
  const inputs = new Map<string, number>();
  layers.forEach((layer, i) => {
    const at = `${key}.layer[${i}]`;
    const sameName = names.get(layer.name);
    if (sameName !== undefined)
      issues.push({
        key: `${at}.name`,
        message: `${at}.name = "${layer.name}": already used by ${key}.layer[${sameName}]; layer names must be unique`,
      });
    names.set(layer.name, i);
    const sameInput = inputs.get(layer.input);
    if (sameInput !== undefined)
      issues.push({
        key: `${at}.input`,
        message: `${at}.input = ${formatValue('input', layer.input)}: already the input of ${key}.layer[${sameInput}]; each layer needs its own stream`,
      });
    inputs.set(layer.input, i);
    const before = layers[i - 1];
    if (before !== undefined && layer.min_bitrate_kbps < before.min_bitrate_kbps)
      issues.push({
        key: `${at}.min_bitrate_kbps`,
        message: `${at}.min_bitrate_kbps = ${layer.min_bitrate_kbps}: below ${key}.layer[${i - 1}] ("${before.name}", ${before.min_bitrate_kbps}); declare layers lowest first (min_bitrate_kbps never decreasing)`,
      });
  });
  return layers.map((layer, i) => [layer.input, `${key}.layer[${i}].input`] as const);
}

function describeIssue(issue: z.core.$ZodIssue, raw: unknown): ConfigIssue {
  const key = formatKey(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeys(issue.path, raw);
    const parts = issue.keys.map((name) => {
      const full = key === '' ? name : `${key}.${name}`;
      const suggestion = closest(name, known);
      return `unknown key ${full}${suggestion === undefined ? '' : `; did you mean ${suggestion}?`}`;
    });
    return { key: key === '' ? issue.keys[0]! : `${key}.${issue.keys[0]}`, message: parts.join('\n  ') };
  }
  if (issue.code === 'invalid_union') {
    // Only the channel union exists: its discriminator is what is wrong.
    const atKind = issue.path.at(-1) === 'kind';
    const kindKey = atKind ? key : `${key}.kind`;
    const input = issue.input;
    const kind = typeof input === 'object' && input !== null ? (input as { kind?: unknown }).kind : input;
    const value = kind === undefined ? ' is missing' : ` = ${formatValue('', kind)}`;
    return {
      key: kindKey,
      message: `${kindKey}${value}: expected a channel with kind = "video", "sensor" or "command"`,
    };
  }
  const value =
    'input' in issue && issue.input !== undefined ? ` = ${formatValue(key, issue.input)}` : ' is missing';
  return { key, message: `${key}${value}: expected ${issue.message}` };
}

/** Keys the schema allows at `path`, for suggestions. */
function knownKeys(path: readonly PropertyKey[], raw: unknown): string[] {
  const top = path[0];
  if (path.length === 0) return Object.keys(fileSchema.shape);
  if (top === 'agent') return Object.keys(agentSchema.shape);
  if (top === 'publisher_control') return ['udp'];
  if (top === 'channel') {
    if (path.length > 3 && path[2] === 'layer') return Object.keys(layerSchema.shape);
    const kind = (raw as { channel?: { kind?: unknown }[] }).channel?.[Number(path[1])]?.kind;
    const schema = kind === 'sensor' ? sensorSchema : kind === 'command' ? commandSchema : videoSchema;
    return Object.keys(schema.shape);
  }
  return [];
}

function formatKey(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (acc, part) =>
      typeof part === 'number' ? `${acc}[${part}]` : acc === '' ? String(part) : `${acc}.${String(part)}`,
    '',
  );
}

function formatValue(key: string, value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(/input|output|url/.test(key) ? redactUrl(value) : value);
  if (typeof value === 'object' && value !== null) return Array.isArray(value) ? 'an array' : 'a table';
  return String(value);
}

/**
 * The known key that `name` most likely meant: one it is the start of (`port_mapping_lifetim`),
 * else one within an edit distance of 3, else one it extends (`port_mapping_on`).
 */
function closest(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  const completed = known.find((candidate) => candidate.startsWith(lower));
  if (completed !== undefined) return completed;
  const near = nearest(lower, known);
  if (near !== undefined) return near;
  return known.find((candidate) => lower.startsWith(candidate));
}

/** The known key within an edit distance of 3 of `lower`, the nearest first. */
function nearest(lower: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 4;
  for (const candidate of known) {
    const d = editDistance(lower, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** `<address>:<port>` with an IPv4 address, a `[IPv6]` address or a host name. */
function parseUdpAddress(value: string): UdpAddress | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s/]+):(\d{1,5})$/.exec(value);
  if (match === null) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
}

function isSignalUrl(value: string): boolean {
  try {
    const url = new URL(value);
    if (url.protocol === 'wss:') return true;
    return url.protocol === 'ws:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  } catch {
    return false;
  }
}

function firstLine(message: string): string {
  return message.split('\n')[0] ?? message;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
