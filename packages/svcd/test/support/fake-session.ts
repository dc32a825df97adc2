/**
 * An in-memory transport {@link Session}: the test plays the pilot's side of it (control messages,
 * datagrams, leaving) and reads what the robot wrote.
 */
import type { Session, SessionCloseInfo, SessionHandlers, SessionStats } from '@svc/transport';
import { ControlLineReader, type ControlMessage, encodeControlMessage, WireError } from '@svc/wire';

/**
 * An in-memory {@link Session}; `onChange` runs after everything the robot or the pilot does.
 * Like the pilot SDK, it echoes each `heartbeat` the robot writes at once (set
 * {@link FakeSession.echoHeartbeats} to false to play a pilot that went silent).
 */
export class FakeSession implements Session {
  static #next = 0;
  readonly id = `fake-${++FakeSession.#next}`;
  kind: 'direct' | 'relay' = 'direct';
  backend: 'quic' | 'webrtc' = 'quic';
  readonly remoteAddress = '127.0.0.1:9';
  readonly path = '/';
  readonly control: ControlMessage[] = [];
  readonly datagrams: Uint8Array[] = [];
  closeInfo: SessionCloseInfo | undefined;
  /** Whether the pilot answers the robot's heartbeats (default true). */
  echoHeartbeats = true;
  readonly #onChange: () => void;
  readonly #reader = new ControlLineReader();
  #handlers: SessionHandlers = {};

  constructor(onChange: () => void = () => {}) {
    this.#onChange = onChange;
  }

  get closed(): boolean {
    return this.closeInfo !== undefined;
  }
  maxDatagramBytes(): number {
    return 1200;
  }
  sendDatagram(payload: Uint8Array): boolean {
    this.datagrams.push(payload.slice()); // the transport copies, as the real one does
    this.#onChange();
    return true;
  }
  writeControl(bytes: Uint8Array): void {
    const echoes: ControlMessage[] = [];
    for (const m of this.#reader.push(bytes)) {
      if (m instanceof WireError) continue;
      this.control.push(m);
      if (m.type === 'heartbeat' && this.echoHeartbeats && !this.closed) echoes.push(m);
    }
    this.#onChange();
    for (const echo of echoes) this.pilotSends(echo);
  }
  setHandlers(handlers: SessionHandlers): void {
    this.#handlers = handlers;
  }
  close(code = 0, reason = ''): void {
    this.#end({ code, reason, by: 'local' });
  }
  stats(): SessionStats {
    return {
      rttMs: 1,
      cwndBytes: 0,
      deliveryRateBps: 0,
      lostPackets: 0,
      sentPackets: 0,
      transportQueuedDatagrams: 0,
    };
  }
  queuedDatagramBytes(): number {
    return 0;
  }

  /** The pilot writes a control message. */
  pilotSends(message: ControlMessage): void {
    this.#handlers.onControlData?.(encodeControlMessage(message));
  }
  /** A datagram from the pilot. */
  pilotDatagram(datagram: Uint8Array): void {
    this.#handlers.onDatagram?.(datagram.slice());
  }
  /** The pilot goes away. */
  pilotLeaves(): void {
    this.#end({ code: 0, reason: 'bye', by: 'peer' });
  }
  /** The first control message of a type the robot wrote. */
  find<T extends ControlMessage['type']>(type: T): Extract<ControlMessage, { type: T }> | undefined {
    return this.control.find((m) => m.type === type) as Extract<ControlMessage, { type: T }> | undefined;
  }
  /** The control message types the robot wrote, in order. */
  controlTypes(): string[] {
    return this.control.map((m) => m.type);
  }

  #end(info: SessionCloseInfo): void {
    if (this.closeInfo !== undefined) return;
    this.closeInfo = info;
    this.#handlers.onClose?.(info);
    this.#onChange();
  }
}
