/**
 * The shaper's options: what each one means, its defaults (in one place) and the schema that
 * checks them, so a bad value fails with the option's name, the value and what was expected.
 */
import { isIP } from 'node:net';
import { type ZodError, z } from 'zod';
import { ShaperError, type ShaperIssue } from './errors.js';

/**
 * Gilbert-Elliott burst loss: a two-state link (good: delivers, bad: loses) whose long-run loss
 * fraction is `rate` and whose runs of consecutive losses last `meanBurst` datagrams on average.
 */
export interface BurstLoss {
  /** Long-run fraction of datagrams lost in bursts, 0 to 1 (0.05 is 5 %; 0 turns bursts off). */
  readonly rate: number;
  /** Mean number of consecutive datagrams lost per burst, at least 1. */
  readonly meanBurst: number;
}

/**
 * How one direction of the link is impaired. Every field is optional; a missing field takes its
 * value from {@link IMPAIRMENT_DEFAULTS} (at start) or keeps its current value (in `update`).
 */
export interface Impairment {
  /** Link rate in kbit/s (1000 bit/s); 0 is unlimited. Above it datagrams queue. */
  readonly rateKbps?: number;
  /** Bytes that may wait for the link; a datagram that would exceed it is dropped (tail drop). */
  readonly queueBytes?: number;
  /** One-way delay in ms, added after the link has sent the datagram. */
  readonly delayMs?: number;
  /** Jitter in ms: each datagram's delay is uniform in [delayMs - jitterMs, delayMs + jitterMs]. */
  readonly jitterMs?: number;
  /** Let jitter reorder datagrams; when false (default) a datagram never overtakes an earlier one. */
  readonly reorder?: boolean;
  /** Independent loss probability per datagram, 0 to 1 (0.05 is 5 %). */
  readonly loss?: number;
  /** Burst loss (Gilbert-Elliott); `{rate: 0, meanBurst: 1}` is none. */
  readonly burstLoss?: BurstLoss;
}

/** An {@link Impairment} with every field set. */
export interface ResolvedImpairment {
  readonly rateKbps: number;
  readonly queueBytes: number;
  readonly delayMs: number;
  readonly jitterMs: number;
  readonly reorder: boolean;
  readonly loss: number;
  readonly burstLoss: BurstLoss;
}

/** The clean link: unlimited rate, a 64 KiB queue, no delay, no jitter, no loss. */
export const IMPAIRMENT_DEFAULTS: ResolvedImpairment = Object.freeze({
  rateKbps: 0,
  queueBytes: 64 * 1024,
  delayMs: 0,
  jitterMs: 0,
  reorder: false,
  loss: 0,
  burstLoss: Object.freeze({ rate: 0, meanBurst: 1 }),
});

/** Defaults of {@link LinkShaperOptions} other than the impairments. */
export const SHAPER_DEFAULTS = Object.freeze({
  seed: 1,
  idleTimeoutMs: 60_000,
  maxClients: 256,
});

/** An IP address and a UDP port. */
export interface Endpoint {
  /** An IPv4 or IPv6 address (no host names: the shaper never resolves names). */
  readonly address: string;
  readonly port: number;
}

/** Options of {@link LinkShaper.start}. */
export interface LinkShaperOptions {
  /** Where pilots send to; port 0 picks a free port ({@link LinkShaper.address} tells which). */
  readonly listen: Endpoint;
  /** Where the relay forwards to: the daemon's `quic_port`. */
  readonly target: Endpoint;
  /** Impairment of client → target datagrams (pilot → robot). */
  readonly up?: Impairment;
  /** Impairment of target → client datagrams (robot → pilot). */
  readonly down?: Impairment;
  /** Seed of the random draws, an unsigned 32-bit integer (default 1). */
  readonly seed?: number;
  /** A client mapping silent this long in both directions is closed (ms, default 60 000). */
  readonly idleTimeoutMs?: number;
  /** Most clients mapped at once; datagrams from further clients are refused (default 256). */
  readonly maxClients?: number;
  /** Told of send and socket errors after start (they are also counted in the stats). */
  readonly onError?: (err: ShaperError) => void;
}

/** {@link LinkShaperOptions} checked, with defaults applied. */
export interface ResolvedShaperOptions {
  readonly listen: Endpoint;
  readonly target: Endpoint;
  readonly up: ResolvedImpairment;
  readonly down: ResolvedImpairment;
  readonly seed: number;
  readonly idleTimeoutMs: number;
  readonly maxClients: number;
}

const num = (min: number, max: number, expected: string) =>
  z.number({ error: expected }).min(min, { error: expected }).max(max, { error: expected });
const int = (min: number, max: number, expected: string) => num(min, max, expected).int({ error: expected });

const burstLossSchema = z
  .object({
    rate: num(0, 0.999, 'a loss fraction from 0 to below 1 (0.05 is 5 %)'),
    meanBurst: num(1, 10_000, 'a mean burst length in datagrams, from 1 to 10000'),
  })
  .strict()
  .superRefine((value, ctx) => {
    const most = value.meanBurst / (value.meanBurst + 1);
    if (value.rate > most) {
      ctx.addIssue({
        code: 'custom',
        path: ['rate'],
        input: value.rate,
        message: `at most meanBurst / (meanBurst + 1) = ${round(most)} with meanBurst ${value.meanBurst} (a longer mean burst allows a higher rate)`,
      });
    }
  });

const impairmentSchema = z
  .object({
    rateKbps: num(0, 100_000_000, 'a rate in kbit/s from 0 (unlimited) to 100000000'),
    queueBytes: int(1500, 1 << 30, 'a whole number of bytes from 1500 (one full datagram) to 1073741824'),
    delayMs: num(0, 60_000, 'a delay in ms from 0 to 60000'),
    jitterMs: num(0, 60_000, 'a jitter in ms from 0 to 60000'),
    reorder: z.boolean({ error: 'true or false' }),
    loss: num(0, 1, 'a probability from 0 to 1 (0.05 is 5 %)'),
    burstLoss: burstLossSchema,
  })
  .partial()
  .strict();

const endpointSchema = (minPort: number) =>
  z
    .object({
      address: z
        .string({ error: 'an IPv4 or IPv6 address such as 127.0.0.1 or ::1' })
        .refine((a) => isIP(a) !== 0, {
          error: 'an IPv4 or IPv6 address such as 127.0.0.1 or ::1 (not a name)',
        }),
      port: int(minPort, 65535, `a port from ${minPort} to 65535`),
    })
    .strict();

const shaperSchema = z
  .object({
    listen: endpointSchema(0),
    target: endpointSchema(1),
    up: impairmentSchema.optional(),
    down: impairmentSchema.optional(),
    seed: int(0, 0xffffffff, 'an integer from 0 to 4294967295').optional(),
    idleTimeoutMs: num(10, 86_400_000, 'a time in ms from 10 to 86400000').optional(),
    maxClients: int(1, 4096, 'an integer from 1 to 4096').optional(),
  })
  .strict();

/** Checks start options and applies the defaults; throws {@link ShaperError} `invalid-options`. */
export function resolveShaperOptions(options: LinkShaperOptions): ResolvedShaperOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ShaperError(
      'invalid-options',
      'invalid shaper options: expected an object with listen and target',
      {
        issues: [{ option: '', message: 'expected an object with listen and target' }],
      },
    );
  }
  const { onError: _onError, ...rest } = options;
  const parsed = shaperSchema.safeParse(rest, { reportInput: true });
  if (!parsed.success)
    throw invalid(parsed.error, 'listen, target, up, down, seed, idleTimeoutMs, maxClients, onError');
  const value = parsed.data;
  return Object.freeze({
    listen: Object.freeze({ ...value.listen }),
    target: Object.freeze({ ...value.target }),
    up: applyImpairment(IMPAIRMENT_DEFAULTS, value.up ?? {}),
    down: applyImpairment(IMPAIRMENT_DEFAULTS, value.down ?? {}),
    seed: value.seed ?? SHAPER_DEFAULTS.seed,
    idleTimeoutMs: value.idleTimeoutMs ?? SHAPER_DEFAULTS.idleTimeoutMs,
    maxClients: value.maxClients ?? SHAPER_DEFAULTS.maxClients,
  });
}

/**
 * Checks a change of impairments and returns them applied over the current ones (a field not
 * given keeps its value); throws {@link ShaperError} `invalid-options`, changing nothing.
 */
export function resolveUpdate(
  current: { up: ResolvedImpairment; down: ResolvedImpairment },
  change: { up?: Impairment; down?: Impairment },
): { up: ResolvedImpairment; down: ResolvedImpairment } {
  const parsed = z
    .object({ up: impairmentSchema.optional(), down: impairmentSchema.optional() })
    .strict()
    .safeParse(change, { reportInput: true });
  if (!parsed.success) throw invalid(parsed.error, 'up, down');
  return {
    up: applyImpairment(current.up, parsed.data.up ?? {}),
    down: applyImpairment(current.down, parsed.data.down ?? {}),
  };
}

function applyImpairment(
  base: ResolvedImpairment,
  change: z.infer<typeof impairmentSchema>,
): ResolvedImpairment {
  const out: ResolvedImpairment = {
    rateKbps: change.rateKbps ?? base.rateKbps,
    queueBytes: change.queueBytes ?? base.queueBytes,
    delayMs: change.delayMs ?? base.delayMs,
    jitterMs: change.jitterMs ?? base.jitterMs,
    reorder: change.reorder ?? base.reorder,
    loss: change.loss ?? base.loss,
    burstLoss: Object.freeze({ ...(change.burstLoss ?? base.burstLoss) }),
  };
  return Object.freeze(out);
}

function invalid(error: ZodError, rootKeys: string): ShaperError {
  const issues: ShaperIssue[] = error.issues.map((issue) => {
    const option = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      const keys = issue.keys.map((k) => `"${k}"`).join(', ');
      return {
        option,
        message: `unknown option ${keys}; known options are ${knownKeys(issue.path, rootKeys)}`,
      };
    }
    return { option, message: `got ${describe(issue.input)}, expected ${issue.message}` };
  });
  const lines = issues.map((i) => `${i.option === '' ? '(options)' : i.option}: ${i.message}`);
  return new ShaperError('invalid-options', `invalid shaper options: ${lines.join('; ')}`, {
    issues,
    cause: error,
  });
}

function knownKeys(path: readonly PropertyKey[], rootKeys: string): string {
  const last = path[path.length - 1];
  if (path.length === 0) return rootKeys;
  if (last === 'burstLoss') return 'rate, meanBurst';
  if (last === 'listen' || last === 'target') return 'address, port';
  return Object.keys(IMPAIRMENT_DEFAULTS).join(', ');
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function round(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}
