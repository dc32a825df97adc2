import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The Debian Python with GObject introspection (the default `python3` may lack `gi`). */
const PYTHON = '/usr/bin/python3';

/** The GStreamer publisher script shipped with this package. */
const SCRIPT = fileURLToPath(new URL('../assets/publisher.py', import.meta.url));

/** How long the publisher may take to send its first frames (Python and GStreamer load in about 1 s). */
const START_TIMEOUT_MS = 30_000;

/** How long `stop()` waits for SIGTERM before SIGKILL. */
const STOP_GRACE_MS = 3000;

/** The layer name of a publisher without `layers`. */
const SINGLE_LAYER_NAME = 'main';

/** Test patterns of the source: `snow` is noise, so the encoder spends its whole bitrate. */
export type PublisherPattern = 'ball' | 'snow' | 'smpte';

/** One simulcast layer: its own encoder and RTP port, fed by the shared source. */
export interface PublisherLayer {
  /** What `layer` datagrams name it by (the daemon's `[[channel.layer]]` name). */
  readonly name: string;
  /** RTP destination port on 127.0.0.1. */
  readonly port: number;
  readonly width: number;
  readonly height: number;
  /** The layer's encoder bitrate; a `video-config` lowers it, never raises it above this. */
  readonly bitrateKbps: number;
}

/** Options of {@link startPublisher}. Give `port` for one stream or `layers` for simulcast. */
export interface PublisherOptions {
  /** RTP destination port on 127.0.0.1 of the single stream (the daemon's `rtp://` input). */
  readonly port?: number;
  /** Simulcast: the same source encoded once per layer, each to its own port. */
  readonly layers?: readonly PublisherLayer[];
  /** The video channel whose datagrams it acts on (others are reported as ignored). Default 1. */
  readonly channel?: number;
  /** False: a publisher that reports every datagram but acts on none, and keeps streaming. Default true. */
  readonly answer?: boolean;
  /**
   * Milliseconds between a `recovery-request` and the key unit it forces, as an encoder behind a
   * slow link would answer. Default 0.
   */
  readonly answerDelayMs?: number;
  /** True: an encoder with a fixed rate, which ignores `video-config` and answers the rest. Default false. */
  readonly fixedBitrate?: boolean;
  /** Size of the single stream; with `layers`, the source size (default: the largest layer). Default 320×240. */
  readonly width?: number;
  readonly height?: number;
  /** Default 30. */
  readonly fps?: number;
  /**
   * Keyframe interval in frames (x264 `key-int-max`; scene-cut keyframes are off). Default 10 s
   * worth, the longest GOP spec section 6 allows on the `latency` and `balanced` profiles.
   */
  readonly gopFrames?: number;
  /** Starting encoder bitrate of the single stream in kbit/s. Default 1000. */
  readonly bitrateKbps?: number;
  /** Default `ball`. */
  readonly pattern?: PublisherPattern;
  /** Extra environment of the script (for example `GST_DEBUG`). */
  readonly env?: Readonly<Record<string, string>>;
}

/** One JSON line the publisher printed: `event` names it, the other fields depend on it. */
export interface PublisherEvent {
  /** `received`, `malformed`, `keyframe-forced`, `bitrate-set` or `ignored`. */
  readonly event: string;
  readonly [field: string]: unknown;
}

/** A running GStreamer publisher answering publisher-control datagrams. */
export interface RunningPublisher {
  /** `127.0.0.1:<port>` of the control socket: what goes into svcd's `[publisher_control] udp`. */
  readonly controlAddress: string;
  readonly controlPort: number;
  /** The layer names, in order (`main` for a single stream). */
  readonly layers: readonly string[];
  /** Every well-formed datagram received, as parsed, acted on or not. */
  received(): Record<string, unknown>[];
  /** What it did or declined: `keyframe-forced`, `bitrate-set` and `ignored` events, in order. */
  actions(): PublisherEvent[];
  /** One `malformed` event (with `reason` and `count`) per datagram it could not read. */
  malformed(): PublisherEvent[];
  /**
   * Resolves with the first event (already printed or to come, of any kind, `received` included)
   * that matches; rejects after `timeoutMs` listing what was seen, or when the publisher exits.
   */
  waitFor(predicate: (event: PublisherEvent) => boolean, timeoutMs: number): Promise<PublisherEvent>;
  /** Stops the publisher; resolves once the process has exited. Safe to call more than once. */
  stop(): Promise<void>;
}

/** The config the script reads (see the script's docstring). */
interface ScriptConfig {
  readonly channel: number;
  readonly answer: boolean;
  readonly answerDelayMs: number;
  readonly fixedBitrate: boolean;
  readonly fps: number;
  readonly gopFrames: number;
  readonly pattern: PublisherPattern;
  readonly sourceWidth: number;
  readonly sourceHeight: number;
  readonly layers: readonly PublisherLayer[];
}

/** Publishers not yet stopped: killed if the test process exits without stopping them. */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function killLeftoversOnExit(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const leftover of running) leftover.kill('SIGKILL');
  });
}

function positiveInt(name: string, value: number, max: number): number {
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new TypeError(`startPublisher: ${name} must be an integer from 1 to ${max}, got ${String(value)}`);
  }
  return value;
}

function nonNegativeInt(name: string, value: number, max: number): number {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new TypeError(`startPublisher: ${name} must be an integer from 0 to ${max}, got ${String(value)}`);
  }
  return value;
}

function evenSize(name: string, value: number): number {
  positiveInt(name, value, 4096);
  if (value % 2 !== 0)
    throw new TypeError(`startPublisher: ${name} must be even for I420 video, got ${value}`);
  return value;
}

/** Checks the options (TypeError naming the bad one) and fills in the defaults. */
function scriptConfig(options: PublisherOptions): ScriptConfig {
  const fps = positiveInt('fps', options.fps ?? 30, 240);
  let layers: readonly PublisherLayer[];
  if (options.layers !== undefined) {
    if (options.port !== undefined || options.bitrateKbps !== undefined) {
      throw new TypeError(
        'startPublisher: give either port and bitrateKbps (one stream) or layers, not both',
      );
    }
    if (options.layers.length === 0)
      throw new TypeError('startPublisher: layers is empty; omit it for one stream');
    const names = new Set<string>();
    layers = options.layers.map((layer, index) => {
      if (layer.name === '' || names.has(layer.name)) {
        throw new TypeError(
          `startPublisher: layers[${index}].name must be non-empty and unique, got "${layer.name}"`,
        );
      }
      names.add(layer.name);
      return {
        name: layer.name,
        port: positiveInt(`layers[${index}].port`, layer.port, 65535),
        width: evenSize(`layers[${index}].width`, layer.width),
        height: evenSize(`layers[${index}].height`, layer.height),
        bitrateKbps: positiveInt(`layers[${index}].bitrateKbps`, layer.bitrateKbps, 2_048_000),
      };
    });
  } else {
    if (options.port === undefined) throw new TypeError('startPublisher: give port (one stream) or layers');
    layers = [
      {
        name: SINGLE_LAYER_NAME,
        port: positiveInt('port', options.port, 65535),
        width: evenSize('width', options.width ?? 320),
        height: evenSize('height', options.height ?? 240),
        bitrateKbps: positiveInt('bitrateKbps', options.bitrateKbps ?? 1000, 2_048_000),
      },
    ];
  }
  const widest = layers.reduce((a, b) => (b.width * b.height > a.width * a.height ? b : a));
  return {
    channel: positiveInt('channel', options.channel ?? 1, 255),
    answer: options.answer ?? true,
    answerDelayMs: nonNegativeInt('answerDelayMs', options.answerDelayMs ?? 0, 60_000),
    fixedBitrate: options.fixedBitrate ?? false,
    fps,
    gopFrames: positiveInt('gopFrames', options.gopFrames ?? fps * 10, 100_000),
    pattern: options.pattern ?? 'ball',
    sourceWidth: evenSize('width', options.width ?? widest.width),
    sourceHeight: evenSize('height', options.height ?? widest.height),
    layers,
  };
}

/** A waiter of `waitFor`. */
interface Waiter {
  readonly predicate: (event: PublisherEvent) => boolean;
  readonly resolve: (event: PublisherEvent) => void;
  readonly reject: (error: Error) => void;
}

/**
 * Starts a live H.264 publisher (GStreamer from `/usr/bin/python3`): a test pattern, one x264
 * encoder per layer (zero latency, no B-frames, one slice per frame) and RTP (payload type 96,
 * parameter sets before every keyframe) to `127.0.0.1:<port>`, plus a UDP control socket for the
 * publisher-control datagrams of `docs/protocol/publisher-control.md`.
 *
 * It resolves once every encoder has sent its first frame, and acts like a publisher that follows
 * spec section 6: `recovery-request` (any `kind`) forces a key unit on every layer's encoder (it
 * cannot know which layer the daemon relays at this instant; a keyframe on each is always a valid
 * answer); `video-config` sets the encoder bitrate to `maxBitrateKbps` (with `layers`, capped at
 * each layer's own bitrate); `layer` forces a key unit on the named layer. Malformed datagrams are
 * counted, never fatal. Rejects with the script's stderr when it cannot start (a GStreamer plugin
 * missing). Stop it after the test.
 */
export async function startPublisher(options: PublisherOptions): Promise<RunningPublisher> {
  const config = scriptConfig(options);
  if (!existsSync(PYTHON)) {
    throw new Error(
      `${PYTHON} is missing: the test publisher needs Debian's python3-gi and GStreamer ` +
        '(`npm test` installs them as root via scripts/ensure-system.sh).',
    );
  }
  const child = spawn(PYTHON, [SCRIPT, JSON.stringify(config)], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
  });
  killLeftoversOnExit(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text: string) => {
    stderr = (stderr + text).slice(-4000);
  });
  child.stdin.on('error', () => {});

  const events: PublisherEvent[] = [];
  const waiters = new Set<Waiter>();
  let exitReason: string | undefined;

  const lines = createInterface({ input: child.stdout });
  const controlPort = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the test publisher sent no frame within ${START_TIMEOUT_MS} ms: ${stderr.trim()}`));
    }, START_TIMEOUT_MS);
    const onLine = (line: string): void => {
      let event: PublisherEvent;
      try {
        event = JSON.parse(line) as PublisherEvent;
      } catch (err) {
        process.stderr.write(`test publisher printed a line that is not JSON (${String(err)}): ${line}\n`);
        return;
      }
      if (event.event === 'ready') {
        clearTimeout(timer);
        resolve(event.controlPort as number);
        return;
      }
      events.push(event);
      for (const waiter of waiters) {
        if (!waiter.predicate(event)) continue;
        waiters.delete(waiter);
        waiter.resolve(event);
      }
    };
    lines.on('line', onLine);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${PYTHON} for the test publisher: ${err.message}`, { cause: err }));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      exitReason = `the test publisher exited (${code ?? signal}): ${stderr.trim()}`;
      for (const waiter of waiters) waiter.reject(new Error(exitReason));
      waiters.clear();
      reject(new Error(`the test publisher exited (${code ?? signal}) before streaming: ${stderr.trim()}`));
    });
  });

  let stopping: Promise<void> | undefined;
  return {
    controlAddress: `127.0.0.1:${controlPort}`,
    controlPort,
    layers: config.layers.map((layer) => layer.name),
    received: () =>
      events
        .filter((event) => event.event === 'received')
        .map((event) => event.datagram as Record<string, unknown>),
    actions: () => events.filter((event) => event.event !== 'received' && event.event !== 'malformed'),
    malformed: () => events.filter((event) => event.event === 'malformed'),
    waitFor(predicate, timeoutMs) {
      const seen = events.find(predicate);
      if (seen !== undefined) return Promise.resolve(seen);
      if (exitReason !== undefined) return Promise.reject(new Error(exitReason));
      return new Promise<PublisherEvent>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(
            new Error(
              `the test publisher printed no matching event within ${timeoutMs} ms; it printed: ` +
                (events.map((event) => JSON.stringify(event)).join(' ') || 'nothing'),
            ),
          );
        }, timeoutMs);
        const waiter: Waiter = {
          predicate,
          resolve: (event) => {
            clearTimeout(timer);
            resolve(event);
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        };
        waiters.add(waiter);
      });
    },
    stop() {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}
