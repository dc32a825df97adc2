/**
 * The request/response exchange of RTSP on one TCP connection to a camera: CSeq numbering,
 * answers matched to requests, timeouts, one 401 answered with credentials, the camera's own
 * requests answered, and interleaved RTP handed on.
 */
import { type Socket as TcpSocket, connect as tcpConnect } from 'node:net';
import { type Clock, type Logger, redactText, redactUrl, type TimerHandle } from '@svc/runtime';
import { MediaError } from '../errors.js';
import { parseAuthenticateHeaders, RtspAuthenticator, type RtspCredentials } from './auth.js';
import {
  type RtspMessage,
  RtspMessageParser,
  type RtspResponse,
  type RtspServerRequest,
  serializeRequest,
  serializeResponse,
} from './message.js';

/** Options of {@link RtspConnection}. */
export interface RtspConnectionOptions {
  readonly host: string;
  readonly port: number;
  /** Allowed time for connecting, in ms. */
  readonly timeoutMs: number;
  /** `User-Agent` of every request. */
  readonly userAgent: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** An interleaved frame (`$`, channel, length, payload) arrived. Runs per RTP packet. */
  readonly onInterleaved: (channel: number, payload: Uint8Array) => void;
  /** The open connection failed (lost, garbage, {@link RtspConnection.fail}); called once, never for `close()`. */
  readonly onFailure: (error: MediaError) => void;
}

/** A request awaiting its answer. */
interface PendingRequest {
  readonly resolve: (response: RtspResponse) => void;
  readonly reject: (error: MediaError) => void;
  readonly timer: TimerHandle;
}

/** A header line of a request. */
export type HeaderLine = readonly [name: string, value: string];

/** A reason phrase from the network, safe to put in a message. */
export function sanitizeReason(reason: string): string {
  const printable = reason.replace(/[^\x20-\x7e]/g, '?');
  return redactText(printable.length > 80 ? `${printable.slice(0, 80)}...` : printable);
}

/** Any error as a {@link MediaError} whose message is redacted. */
export function asMediaError(err: unknown): MediaError {
  if (err instanceof MediaError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new MediaError('malformed-rtsp', `RTSP client error: ${redactText(message)}`, { cause: err });
}

/**
 * Passes a 2xx answer.
 *
 * @throws MediaError `not-found` for 404, `rtsp-status` for any other status.
 */
export function ensureSuccess(response: RtspResponse, method: string, url: string): void {
  if (response.status >= 200 && response.status < 300) return;
  const reason = sanitizeReason(response.reason);
  if (response.status === 404) {
    throw new MediaError(
      'not-found',
      `no such stream/mount at ${redactUrl(url)} (${method} answered 404 ${reason})`,
    );
  }
  throw new MediaError('rtsp-status', `${method} ${redactUrl(url)} answered ${response.status} ${reason}`);
}

/**
 * One TCP connection to a camera. {@link RtspConnection.connect} opens it; from then on it fails
 * at most once (reported to `onFailure`) or is closed by its owner, and every request after that
 * is rejected with the same error.
 */
export class RtspConnection {
  readonly #options: RtspConnectionOptions;
  readonly #socket: TcpSocket;
  readonly #where: string;
  readonly #closed: Promise<void>;
  readonly #parser = new RtspMessageParser();
  readonly #pending = new Map<number, PendingRequest>();
  #cseq = 0;
  /** Set once the connection failed or closing began: every later request fails with it. */
  #failure: MediaError | undefined;
  /** How to answer the camera's challenge, once a 401 named one. */
  #auth: RtspAuthenticator | undefined;

  /** The `Session` of SETUP's answer, sent with every later request. */
  session: string | undefined;

  /** Starts connecting; {@link RtspConnection.connect} says when it is open. */
  constructor(options: RtspConnectionOptions) {
    this.#options = options;
    const { host, port } = options;
    this.#where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    const socket = tcpConnect({ host, port });
    this.#socket = socket;
    this.#closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  /** The camera's address as the socket sees it. */
  get remoteAddress(): string {
    return this.#socket.remoteAddress ?? this.#options.host;
  }

  /** Our address on this connection (where UDP sockets bind). */
  get localAddress(): string {
    return this.#socket.localAddress ?? '127.0.0.1';
  }

  /**
   * Resolves once the connection is open. Call once.
   *
   * @throws MediaError `unreachable` when the camera refused or did not answer within the
   *   timeout, `closed` (or the close reason) when the owner closed it meanwhile.
   */
  async connect(): Promise<void> {
    const { clock, timeoutMs } = this.#options;
    const socket = this.#socket;
    const where = this.#where;
    await new Promise<void>((resolve, reject) => {
      const timer = clock.setTimeout(() => {
        reject(new MediaError('unreachable', `no connection to ${where} within ${timeoutMs} ms`));
        socket.destroy();
      }, timeoutMs);
      const onError = (err: Error): void => {
        clock.clearTimeout(timer);
        reject(
          new MediaError('unreachable', `cannot connect to ${where}: ${redactText(err.message)}`, {
            cause: err,
          }),
        );
      };
      socket.once('error', onError);
      socket.once('close', () => {
        clock.clearTimeout(timer);
        reject(this.#failure ?? new MediaError('closed', 'the RTSP session was stopped while connecting'));
      });
      socket.once('connect', () => {
        clock.clearTimeout(timer);
        socket.off('error', onError);
        resolve();
      });
    });
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', (err) => {
      this.fail(
        new MediaError('unreachable', `connection to ${where} failed: ${redactText(err.message)}`, {
          cause: err,
        }),
      );
    });
    socket.on('close', () => {
      this.fail(new MediaError('unreachable', `the camera at ${where} closed the connection`));
    });
    this.#options.logger.debug({ address: where }, 'RTSP connected');
  }

  /**
   * Sends a request and waits for its answer, answering one 401 with `credentials`.
   *
   * @throws MediaError `unauthorized` when credentials are missing, rejected or of a scheme this
   *   client cannot do; whatever {@link RtspConnection.send} throws.
   */
  async request(
    method: string,
    url: string,
    headers: readonly HeaderLine[],
    credentials: RtspCredentials | undefined,
    timeoutMs: number,
  ): Promise<RtspResponse> {
    let retried = false;
    for (;;) {
      const response = await this.send(method, url, headers, timeoutMs);
      if (response.status !== 401) return response;
      if (credentials === undefined) {
        throw new MediaError(
          'unauthorized',
          `the camera at ${redactUrl(url)} requires credentials: set SVC_RTSP_USER and SVC_RTSP_PASSWORD`,
        );
      }
      if (retried) {
        throw new MediaError(
          'unauthorized',
          `the camera at ${redactUrl(url)} rejected the credentials (${method} answered 401 twice); ` +
            'check SVC_RTSP_USER and SVC_RTSP_PASSWORD',
        );
      }
      const challenges = parseAuthenticateHeaders(response.headers.getAll('www-authenticate'));
      const auth = RtspAuthenticator.fromChallenges(challenges, credentials);
      if (auth === undefined) {
        const offered = challenges.map((c) => c.scheme).join(', ') || 'none';
        throw new MediaError(
          'unauthorized',
          `the camera at ${redactUrl(url)} asks for authentication this client cannot do (offered: ${sanitizeReason(offered)})`,
        );
      }
      this.#options.logger.debug({ scheme: auth.scheme, method }, 'RTSP authenticating');
      this.#auth = auth;
      retried = true;
    }
  }

  /**
   * Writes one request and waits for the answer with its CSeq.
   *
   * @throws MediaError `timeout` without an answer in time, `malformed-rtsp` for a request that
   *   cannot be written, the connection's failure once it failed or closed.
   */
  send(
    method: string,
    url: string,
    headers: readonly HeaderLine[],
    timeoutMs: number,
  ): Promise<RtspResponse> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const cseq = ++this.#cseq;
    let bytes: Uint8Array;
    try {
      bytes = serializeRequest({
        method,
        uri: url,
        headers: [
          ['CSeq', String(cseq)],
          ['User-Agent', this.#options.userAgent],
          ...(this.session === undefined ? [] : [['Session', this.session] as const]),
          ...(this.#auth === undefined
            ? []
            : [['Authorization', this.#auth.authorization(method, url)] as const]),
          ...headers,
        ],
      });
    } catch (err) {
      return Promise.reject(
        new MediaError(
          'malformed-rtsp',
          `cannot send ${method} to ${redactUrl(url)}: ${redactText(String(err))}`,
          {
            cause: err,
          },
        ),
      );
    }
    const { clock, logger } = this.#options;
    logger.debug({ method, url: redactUrl(url), cseq }, 'RTSP request');
    return new Promise<RtspResponse>((resolve, reject) => {
      const timer = clock.setTimeout(() => {
        this.#pending.delete(cseq);
        reject(new MediaError('timeout', `no answer to ${method} ${redactUrl(url)} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(cseq, {
        resolve: (response) => {
          logger.debug({ method, cseq, status: response.status }, 'RTSP response');
          resolve(response);
        },
        reject,
        timer,
      });
      this.#socket.write(bytes);
    });
  }

  /**
   * Fails the connection: every waiting request is rejected with `error`, the socket closes, and
   * `onFailure` hears of it. Does nothing once the connection failed or closed.
   */
  fail(error: MediaError): void {
    if (this.#failure !== undefined) return;
    this.#end(error);
    this.#options.onFailure(error);
  }

  /**
   * Closes the connection without reporting a failure: waiting requests are rejected with
   * `reason` (or the failure that came first). Resolves once the socket is closed.
   */
  close(reason: MediaError): Promise<void> {
    if (this.#failure === undefined) this.#end(reason);
    return this.#closed;
  }

  #end(error: MediaError): void {
    this.#failure = error;
    for (const pending of this.#pending.values()) {
      this.#options.clock.clearTimeout(pending.timer);
      pending.reject(error);
    }
    this.#pending.clear();
    this.#socket.destroy();
  }

  /** One chunk from the connection: responses, the camera's requests, interleaved packets. */
  #onData(chunk: Uint8Array): void {
    if (this.#failure !== undefined) return;
    let messages: RtspMessage[];
    try {
      messages = this.#parser.push(chunk);
    } catch (err) {
      this.fail(asMediaError(err));
      return;
    }
    for (const message of messages) {
      switch (message.kind) {
        case 'interleaved':
          this.#options.onInterleaved(message.channel, message.payload);
          break;
        case 'response':
          this.#onResponse(message);
          break;
        case 'request':
          this.#answerServerRequest(message);
          break;
        default: {
          const unreachable: never = message;
          throw new TypeError(`unknown RTSP message ${String(unreachable)}`);
        }
      }
    }
  }

  #onResponse(response: RtspResponse): void {
    const cseqText = response.headers.get('cseq');
    const cseq = cseqText !== undefined && /^\d{1,9}$/.test(cseqText.trim()) ? Number(cseqText) : undefined;
    let key = cseq;
    // A camera that drops CSeq still answers in order: give it to the only request waiting.
    if (key === undefined && this.#pending.size === 1) key = this.#pending.keys().next().value;
    const pending = key === undefined ? undefined : this.#pending.get(key);
    if (key === undefined || pending === undefined) {
      this.#options.logger.debug(
        { cseq: cseqText, status: response.status },
        'RTSP response to no pending request ignored',
      );
      return;
    }
    this.#pending.delete(key);
    this.#options.clock.clearTimeout(pending.timer);
    pending.resolve(response);
  }

  /** RFC 2326 lets servers send requests too: answer keep-alive pings, decline the rest. */
  #answerServerRequest(request: RtspServerRequest): void {
    const ok = request.method === 'OPTIONS' || request.method === 'GET_PARAMETER';
    this.#options.logger.debug({ method: request.method }, 'RTSP request from the camera');
    this.#socket.write(
      serializeResponse(ok ? 200 : 501, ok ? 'OK' : 'Not Implemented', request.headers.get('cseq')),
    );
  }
}
