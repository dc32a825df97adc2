/**
 * `svc-shaper`, the link shaper's command line: a seeded UDP impairment relay between pilots and
 * a daemon. See docs/shaper.md.
 */
import { parseArgs } from 'node:util';
import { isShaperError, type ShaperError } from './errors.js';
import type { Impairment, ResolvedImpairment } from './options.js';
import { formatEndpoint, LinkShaper, type ShaperStats } from './shaper.js';
import { parseDuration, parseEndpoint, parseFraction, parseNumber, parseRate, parseSize } from './units.js';

const USAGE = `usage:
  svc-shaper --listen <address:port> --target <address:port> [impairments] [options]

  Relays UDP datagrams from clients (pilots) that send to --listen on to --target (the daemon's
  quic_port) and the replies back, impairing each direction. Port 0 in --listen picks a free
  port; the first line printed says which:
    svc-shaper listening on 127.0.0.1:40123, forwarding to 127.0.0.1:4433, seed 1

impairments, both directions (up = client -> target, down = target -> client); each also as
--up-<name> or --down-<name>, which overrides the both-ways value for that direction:
  --rate <rate>            link rate: 2mbit, 500kbit, 1.5mbit, 0 = unlimited (default)
  --queue <size>           bytes that may wait for the link before tail drop: 64KiB (default),
                           32768, 1MiB (only with --rate)
  --delay <duration>       one-way delay after the link: 40ms, 0.1s (default 0)
  --jitter <duration>      delay varies uniformly by +/- this much: 5ms (default 0)
  --reorder                let jitter reorder datagrams (default: order kept)
  --loss <fraction>        independent loss: 5% or 0.05 (default 0)
  --burst-loss <fraction>  long-run loss in bursts (Gilbert-Elliott): 5% (needs --burst-length)
  --burst-length <n>       mean datagrams per burst, at least 1: 3

options:
  --seed <n>               seed of the random draws, 0..4294967295 (default 1): the same seed
                           and the same datagrams give the same losses and jitter
  --stats-interval <dur>   print counters this often: 1s (default: only at exit)
  --idle-timeout <dur>     forget a client silent this long: 60s (default)
  --json                   print JSON lines instead of text
  --help                   this text

  Exits 0 on SIGINT or SIGTERM (after printing the counters), 2 on a bad argument, 1 when the
  listening address cannot be bound.`;

const IMPAIRMENT_FLAGS = ['rate', 'queue', 'delay', 'jitter', 'loss', 'burst-loss', 'burst-length'] as const;
type ImpairmentFlag = (typeof IMPAIRMENT_FLAGS)[number];
type DirectionName = 'up' | 'down';

/** A bad command line: the message names the argument. */
class UsageError extends Error {}

interface Parsed {
  readonly listen: ReturnType<typeof parseEndpoint>;
  readonly target: ReturnType<typeof parseEndpoint>;
  readonly up: Impairment;
  readonly down: Impairment;
  readonly seed: number | undefined;
  readonly statsIntervalMs: number | undefined;
  readonly idleTimeoutMs: number | undefined;
  readonly json: boolean;
  /** Which flag each option came from, to name it when the shaper rejects its value. */
  readonly flags: Map<string, string>;
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return 0;
  }
  let parsed: Parsed;
  try {
    parsed = parseCommandLine(argv);
  } catch (err) {
    if (!(err instanceof UsageError || err instanceof TypeError)) throw err;
    console.error(`svc-shaper: ${err.message}\n\nsvc-shaper --help describes every argument.`);
    return 2;
  }
  const print = parsed.json
    ? (event: string, body: object) => console.log(JSON.stringify({ event, ...body }))
    : undefined;
  let shaper: LinkShaper;
  try {
    shaper = await LinkShaper.start({
      listen: parsed.listen,
      target: parsed.target,
      up: parsed.up,
      down: parsed.down,
      ...(parsed.seed !== undefined && { seed: parsed.seed }),
      ...(parsed.idleTimeoutMs !== undefined && { idleTimeoutMs: parsed.idleTimeoutMs }),
      onError: errorReporter(),
    });
  } catch (err) {
    if (isShaperError(err, 'invalid-options')) {
      const lines = new Set(err.issues.map((i) => `${parsed.flags.get(i.option) ?? i.option}: ${i.message}`));
      console.error(`svc-shaper: ${[...lines].join('\n  ')}\n\nsvc-shaper --help describes every argument.`);
      return 2;
    }
    if (isShaperError(err, 'bind-failed')) {
      console.error(`svc-shaper: ${err.message}`);
      return 1;
    }
    throw err;
  }
  const here = shaper.address();
  const { up, down } = shaper.impairments();
  if (print !== undefined) {
    print('listening', {
      address: here.address,
      port: here.port,
      target: shaper.target,
      seed: shaper.seed,
      up,
      down,
    });
  } else {
    console.log(
      `svc-shaper listening on ${formatEndpoint(here)}, forwarding to ${formatEndpoint(shaper.target)}, seed ${shaper.seed}`,
    );
    console.log(`  up   (client -> target): ${describeImpairment(up)}`);
    console.log(`  down (target -> client): ${describeImpairment(down)}`);
  }
  const report = (event: 'stats' | 'closed') => {
    const stats = shaper.stats();
    if (print !== undefined) print(event, stats);
    else console.log(`${event} ${describeStats(stats)}`);
  };
  const interval =
    parsed.statsIntervalMs === undefined
      ? undefined
      : setInterval(() => report('stats'), parsed.statsIntervalMs);
  await untilSignal();
  clearInterval(interval);
  report('closed');
  await shaper.close();
  return 0;
}

function parseCommandLine(argv: string[]): Parsed {
  const options: Record<string, { type: 'string' | 'boolean' }> = {
    listen: { type: 'string' },
    target: { type: 'string' },
    seed: { type: 'string' },
    'stats-interval': { type: 'string' },
    'idle-timeout': { type: 'string' },
    json: { type: 'boolean' },
  };
  for (const prefix of ['', 'up-', 'down-']) {
    for (const flag of IMPAIRMENT_FLAGS) options[`${prefix}${flag}`] = { type: 'string' };
    options[`${prefix}reorder`] = { type: 'boolean' };
  }
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const text = (name: string): string | undefined => {
    const v = values[name];
    return typeof v === 'string' ? v : undefined;
  };
  const convert = <V>(flag: string, parse: (t: string) => V): V | undefined => {
    const v = text(flag);
    if (v === undefined) return undefined;
    try {
      return parse(v);
    } catch (err) {
      throw new UsageError(`--${flag}: ${(err as Error).message}`);
    }
  };
  const listenText = text('listen');
  const targetText = text('target');
  if (listenText === undefined)
    throw new UsageError('--listen <address:port> is required, e.g. --listen 127.0.0.1:0');
  if (targetText === undefined) {
    throw new UsageError(
      "--target <address:port> is required: the daemon's quic_port, e.g. --target 127.0.0.1:4433",
    );
  }
  const flags = new Map<string, string>([
    ['seed', '--seed'],
    ['idleTimeoutMs', '--idle-timeout'],
    ['listen.address', '--listen'],
    ['listen.port', '--listen'],
    ['target.address', '--target'],
    ['target.port', '--target'],
  ]);
  const direction = (dir: DirectionName): Impairment => {
    const flag = (name: ImpairmentFlag | 'reorder'): string =>
      values[`${dir}-${name}`] !== undefined ? `${dir}-${name}` : name;
    const get = <V>(name: ImpairmentFlag, field: string, parse: (t: string) => V): V | undefined => {
      flags.set(`${dir}.${field}`, `--${flag(name)}`);
      return convert(flag(name), parse);
    };
    const burstRate = get('burst-loss', 'burstLoss.rate', parseFraction);
    const burstLength = get('burst-length', 'burstLoss.meanBurst', (t) =>
      parseNumber(t, 'a mean burst length in datagrams, at least 1, e.g. 3'),
    );
    if (burstRate !== undefined && burstRate > 0 && burstLength === undefined) {
      throw new UsageError(
        `--${flag('burst-loss')} needs --burst-length (or --${dir}-burst-length): the mean burst length in datagrams, e.g. 3`,
      );
    }
    if (values[`${dir}-burst-length`] !== undefined && burstRate === undefined) {
      throw new UsageError(
        `--${dir}-burst-length needs --burst-loss or --${dir}-burst-loss: the long-run loss, e.g. 5%`,
      );
    }
    const reorder = values[`${dir}-reorder`] === true || values.reorder === true;
    const out: { -readonly [K in keyof Impairment]: Impairment[K] } = {};
    const set = <K extends keyof Impairment>(key: K, value: Impairment[K] | undefined) => {
      if (value !== undefined) out[key] = value;
    };
    set('rateKbps', get('rate', 'rateKbps', parseRate));
    set('queueBytes', get('queue', 'queueBytes', parseSize));
    set('delayMs', get('delay', 'delayMs', parseDuration));
    set('jitterMs', get('jitter', 'jitterMs', parseDuration));
    set('loss', get('loss', 'loss', parseFraction));
    if (reorder) out.reorder = true;
    if (burstRate !== undefined && burstRate > 0 && burstLength !== undefined) {
      out.burstLoss = { rate: burstRate, meanBurst: burstLength };
    }
    return out;
  };
  const up = direction('up');
  const down = direction('down');
  if (text('burst-length') !== undefined && up.burstLoss === undefined && down.burstLoss === undefined) {
    throw new UsageError('--burst-length needs --burst-loss (the long-run loss in bursts, e.g. 5%)');
  }
  return {
    listen: convert('listen', parseEndpoint)!,
    target: convert('target', parseEndpoint)!,
    up,
    down,
    seed: convert('seed', (t) => parseNumber(t, 'an integer from 0 to 4294967295')),
    statsIntervalMs: convert('stats-interval', (t) => {
      const ms = parseDuration(t);
      if (ms < 10) throw new TypeError(`got "${t}", expected at least 10ms, e.g. 1s`);
      return ms;
    }),
    idleTimeoutMs: convert('idle-timeout', parseDuration),
    json: values.json === true,
    flags,
  };
}

function describeImpairment(imp: ResolvedImpairment): string {
  const parts: string[] = [];
  if (imp.rateKbps > 0) parts.push(`rate ${imp.rateKbps} kbit/s, queue ${imp.queueBytes} B`);
  if (imp.delayMs > 0 || imp.jitterMs > 0) parts.push(`delay ${imp.delayMs} ms ± ${imp.jitterMs} ms`);
  if (imp.jitterMs > 0) parts.push(imp.reorder ? 'reordering allowed' : 'order kept');
  if (imp.loss > 0) parts.push(`loss ${percent(imp.loss)}`);
  if (imp.burstLoss.rate > 0) {
    parts.push(
      `burst loss ${percent(imp.burstLoss.rate)} in bursts of ${imp.burstLoss.meanBurst} on average`,
    );
  }
  return parts.length === 0 ? 'clean' : parts.join(', ');
}

function describeStats(stats: ShaperStats): string {
  const direction = (name: string, d: ShaperStats['up']) =>
    `${name} in ${d.datagramsIn} (${d.bytesIn} B) forwarded ${d.forwarded} (${d.bytesForwarded} B) ` +
    `dropped random ${d.dropped.random} burst ${d.dropped.burst} queue ${d.dropped.queue} ` +
    `queued ${d.queuedBytes} B send-errors ${d.sendErrors}`;
  return `${direction('up', stats.up)} | ${direction('down', stats.down)} | clients ${stats.clients}`;
}

function percent(x: number): string {
  return `${Math.round(x * 10_000) / 100} %`;
}

/** Prints each kind of send or socket error once, with its count in the stats from then on. */
function errorReporter(): (err: ShaperError) => void {
  const seen = new Set<string>();
  return (err) => {
    const cause = err.cause as NodeJS.ErrnoException | undefined;
    const kind = `${err.code}:${cause?.code ?? err.message}`;
    if (seen.has(kind)) return;
    seen.add(kind);
    console.error(`svc-shaper: ${err.code}: ${err.message} (further ones are only counted in the stats)`);
  };
}

function untilSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
  });
}

process.exitCode = await main(process.argv.slice(2));
