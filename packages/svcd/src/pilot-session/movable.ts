import type { Clock } from '@svc/runtime';
import type { Session, SessionCloseInfo, SessionHandlers, SessionStats } from '@svc/transport';

/**
 * A pilot session's transport that can change under it: the pilot starts on the relay and moves
 * to a direct path mid-session (`hello {move: true}`, `docs/protocol/control.md`). The session's
 * owner keeps one object; after {@link MovableSession.moveTo} everything goes out on the new
 * transport, while the old one still delivers what was in flight for a short linger and is then
 * closed. Its counters carry on across the move (the old transport's totals are added), so the
 * send path's loss and rate estimates see no jump.
 */
export class MovableSession implements Session {
  readonly id: string;
  readonly #clock: Clock;
  #current: Session;
  #handlers: SessionHandlers = {};
  /** Totals of the transports this session left. */
  #lostBefore = 0;
  #sentBefore = 0;
  readonly #retired = new Set<Session>();

  constructor(initial: Session, clock: Clock) {
    this.id = initial.id;
    this.#current = initial;
    this.#clock = clock;
  }

  get kind(): 'direct' | 'relay' {
    return this.#current.kind;
  }

  get backend(): 'quic' | 'webrtc' {
    return this.#current.backend;
  }

  get remoteAddress(): string {
    return this.#current.remoteAddress;
  }

  get path(): string {
    return this.#current.path;
  }

  get closed(): boolean {
    return this.#current.closed;
  }

  /** The transport in use now. */
  get current(): Session {
    return this.#current;
  }

  maxDatagramBytes(): number {
    return this.#current.maxDatagramBytes();
  }

  sendDatagram(payload: Uint8Array): boolean {
    return this.#current.sendDatagram(payload);
  }

  writeControl(bytes: Uint8Array): void {
    this.#current.writeControl(bytes);
  }

  setHandlers(handlers: SessionHandlers): void {
    this.#handlers = handlers;
    this.#install(this.#current);
  }

  close(code?: number, reason?: string): void {
    for (const old of this.#retired) old.close(code, reason);
    this.#retired.clear();
    this.#current.close(code, reason);
  }

  stats(): SessionStats {
    const s = this.#current.stats();
    return {
      ...s,
      lostPackets: s.lostPackets + this.#lostBefore,
      sentPackets: s.sentPackets + this.#sentBefore,
    };
  }

  queuedDatagramBytes(): number {
    return this.#current.queuedDatagramBytes();
  }

  /**
   * Moves the session to `next`: from now on it sends there and hears its control stream and its
   * close. The old transport's datagrams are still delivered until it is closed, `lingerMs` later.
   */
  moveTo(next: Session, lingerMs: number): void {
    const old = this.#current;
    if (next === old) return;
    const before = old.stats();
    this.#lostBefore += before.lostPackets;
    this.#sentBefore += before.sentPackets;
    this.#current = next;
    this.#retired.add(old);
    old.setHandlers({
      // In flight on the old path: still the session's.
      onDatagram: (payload) => this.#handlers.onDatagram?.(payload),
      onClose: () => this.#retired.delete(old),
    });
    this.#install(next);
    this.#clock.setTimeout(() => {
      if (!this.#retired.has(old)) return;
      this.#retired.delete(old);
      old.close(0, 'the session moved to another path');
    }, lingerMs);
  }

  #install(session: Session): void {
    session.setHandlers({
      onDatagram: (payload) => this.#handlers.onDatagram?.(payload),
      onControlData: (bytes) => {
        if (session === this.#current) this.#handlers.onControlData?.(bytes);
      },
      onClose: (info: SessionCloseInfo) => {
        if (session === this.#current) this.#handlers.onClose?.(info);
        else this.#retired.delete(session);
      },
    });
  }
}
