/**
 * The quiche native binding shipped by `@matrixai/quic` (napi-rs), loaded without the package's
 * high-level QUICServer/QUICSocket classes: `native/quiche.js` only picks the prebuilt `.node`
 * for this platform (`@matrixai/quic-linux-x64` here) and exports it.
 *
 * The binding is optional (ADR 0022): upstream publishes no linux-arm64 build, and an install
 * where it does not load still serves sessions on WebRTC. So it is loaded once, here, without
 * throwing; {@link quicBinding} says why it is missing, and {@link loadQuiche} throws a coded
 * error for the callers that cannot go on without it.
 */
import type { Quiche } from '@matrixai/quic/native/quiche.js';
import type { Config, Connection, ConnectionError, Host, PathStats } from '@matrixai/quic/native/types.js';
import { TransportError } from '../errors.js';

/** Whether this install's QUIC binding loaded, and why not when it did not. */
export type QuicBinding =
  | { readonly available: true; readonly quiche: Quiche }
  | { readonly available: false; readonly reason: string };

async function load(): Promise<QuicBinding> {
  try {
    const module = await import('@matrixai/quic/native/quiche.js');
    return { available: true, quiche: module.default };
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    return {
      available: false,
      reason: `the QUIC binding (@matrixai/quic) does not load on ${process.platform}-${process.arch}: ${detail}`,
    };
  }
}

const loaded = await load();

/** This install's QUIC binding, or why it has none. */
export function quicBinding(): QuicBinding {
  return loaded;
}

/**
 * The quiche napi module: `Config`, `Connection`, `Header`, version helpers and constants.
 *
 * @throws TransportError `quic-unavailable` when the binding does not load on this machine.
 */
export function loadQuiche(): Quiche {
  if (loaded.available) return loaded.quiche;
  throw new TransportError(
    'quic-unavailable',
    `${loaded.reason}; sessions can still be served on WebRTC, which needs no QUIC binding`,
  );
}

/** A quiche `Config` (transport parameters and the TLS context with one certificate). */
export type NativeConfig = Config;

/** A quiche `Connection`, driven sans-IO. */
export type NativeConnection = Connection;

/** A CONNECTION_CLOSE as quiche reports it (`peerError()`, `localError()`). */
export type NativeConnectionError = ConnectionError;

/** An address as the binding takes and gives it: an IP literal and a port. */
export type NativeHostPort = Host;

/** Per-path statistics of a connection (`pathStats()`). */
export type NativePathStats = PathStats;

/**
 * A quiche error as the binding reports it. The binding throws plain `Error`s whose `code` is
 * always `GenericFailure` and whose message is the Debug text of `quiche::Error`, for example
 * `BufferTooShort`, `InvalidStreamState(4)` or `StreamReset(258)`. This is the only identity the
 * binding gives, so it is parsed here, once, and turned into coded errors by the callers.
 */
export interface QuicheError {
  /** The variant name, for example `StreamReset`. */
  readonly kind: string;
  /** The variant's numeric argument when it has one (a stream id or an application error code). */
  readonly value: number | undefined;
}

const QUICHE_ERROR = /^([A-Za-z]+)(?:\((\d+)\))?$/;

/** Reads the quiche error variant from an error thrown by the binding; `undefined` for anything else. */
export function quicheError(err: unknown): QuicheError | undefined {
  if (!(err instanceof Error)) return undefined;
  const match = QUICHE_ERROR.exec(err.message);
  if (match === null) return undefined;
  const value = match[2] === undefined ? undefined : Number(match[2]);
  return { kind: match[1] ?? '', value };
}
