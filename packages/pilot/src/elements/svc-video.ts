import type { ControlSourceState } from '@svc/wire';
import type { PilotConnection } from '../connection/connection.js';
import { formatMs } from './format.js';
import { onPicture, type PictureState } from './sdk.js';

/** The tag name of {@link SvcVideoElement}. */
export const SVC_VIDEO_TAG = 'svc-video';

/** What {@link SvcVideoElement} shows over the picture, if anything. */
export type VideoOverlay = 'none' | 'waiting' | 'stale' | 'no-data' | 'offline';

/** `detail` of the `svc-picture` event. */
export interface SvcPictureDetail {
  readonly channel: number;
  readonly kind: PictureState['kind'];
  readonly ageMs: number;
}

/** `detail` of the `svc-source` event. */
export interface SvcSourceDetail {
  readonly channel: number;
  readonly state: ControlSourceState;
  readonly reason: string | undefined;
}

/** The stale overlay's age is redrawn this often while the picture is frozen, ms. */
const AGE_REDRAW_MS = 100;

const STYLE = `
:host { display: block; position: relative; aspect-ratio: 16 / 9; background: var(--svc-video-background, #000); color: #fff; overflow: hidden; contain: layout paint; }
:host([hidden]) { display: none; }
:host([picture="stale"]) { outline: 3px solid #e5484d; outline-offset: -3px; }
.stage, .stage > [data-svc-channel] { position: absolute; inset: 0; }
.stage > [data-svc-channel] > canvas { width: 100% !important; height: 100% !important; object-fit: contain; }
.overlay { position: absolute; inset: 0; display: flex; flex-direction: column; align-items: center; justify-content: center; gap: 0.3em; padding: 1em; text-align: center; font: 500 16px/1.4 system-ui, sans-serif; pointer-events: none; z-index: 2; }
.overlay[hidden] { display: none; }
.overlay[data-kind="waiting"] { background: rgba(16, 19, 26, 0.75); }
.overlay[data-kind="stale"] { background: rgba(120, 10, 10, 0.25); color: #ffd7d7; }
.overlay[data-kind="stale"] .title { font-size: 1.4em; font-weight: 700; color: #ff6b6b; text-shadow: 0 1px 3px #000; }
.overlay[data-kind="no-data"], .overlay[data-kind="offline"] { background: rgba(24, 26, 32, 0.94); }
.overlay .detail { color: #c9d1d9; font-size: 0.85em; max-width: 40em; overflow-wrap: anywhere; }
.fullscreen { position: absolute; right: 0.4em; bottom: 0.4em; z-index: 3; font: 600 12px system-ui, sans-serif; padding: 0.2em 0.6em; border: 0; border-radius: 0.3em; background: rgba(0, 0, 0, 0.55); color: #fff; cursor: pointer; }
`;

/**
 * `<svc-video channel="front">`: one video channel of a {@link PilotConnection}, the picture kept
 * at its aspect ratio inside the element's box (bars on the sides or above and below), with a
 * full-screen button and what the viewer must know over it: "waiting for video", a frozen picture
 * with its growing age, "camera offline" or "no video from the camera" with the robot's reason.
 *
 * Attributes: `channel` (the channel's id or name). Reflected state: `picture` (`waiting`, `live`
 * or `stale`) and `overlay`. Events (bubbling, composed): `svc-picture` ({@link SvcPictureDetail})
 * and `svc-source` ({@link SvcSourceDetail}).
 *
 * It shows a connection's channel once {@link attach}ed to it (`<svc-pilot>` does this itself).
 */
export class SvcVideoElement extends HTMLElement {
  static readonly observedAttributes = ['channel'];
  readonly #stage: HTMLDivElement;
  readonly #overlay: HTMLDivElement;
  readonly #title: HTMLDivElement;
  readonly #detail: HTMLDivElement;
  #attached:
    | { readonly connection: PilotConnection; readonly dock: HTMLElement; readonly stop: () => void }
    | undefined;
  #source: { readonly state: ControlSourceState; readonly reason: string | undefined } | undefined;
  #picture: PictureState & { readonly atMs: number } = { kind: 'waiting', ageMs: Number.NaN, atMs: 0 };
  #ageTimer: number | undefined;

  constructor() {
    super();
    const root = this.attachShadow({ mode: 'open' });
    const document = this.ownerDocument;
    const style = document.createElement('style');
    style.textContent = STYLE;
    this.#stage = document.createElement('div');
    this.#stage.className = 'stage';
    this.#overlay = document.createElement('div');
    this.#overlay.className = 'overlay';
    this.#overlay.setAttribute('role', 'status');
    this.#overlay.setAttribute('aria-live', 'polite');
    this.#title = document.createElement('div');
    this.#title.className = 'title';
    this.#detail = document.createElement('div');
    this.#detail.className = 'detail';
    this.#overlay.append(this.#title, this.#detail);
    const fullscreen = document.createElement('button');
    fullscreen.type = 'button';
    fullscreen.className = 'fullscreen';
    fullscreen.textContent = 'Full screen';
    fullscreen.addEventListener('click', () => {
      this.toggleFullscreen().catch(() => undefined);
    });
    root.append(style, this.#stage, this.#overlay, fullscreen);
  }

  connectedCallback(): void {
    // Not in the constructor: an element being constructed may not set its own attributes.
    this.#render();
  }

  /** The channel's id, as the connection knows it; `undefined` until it is connected and named. */
  get channelId(): number | undefined {
    const wanted = this.getAttribute('channel');
    if (wanted === null || wanted === '') return undefined;
    const channels = this.#attached?.connection.channels ?? [];
    const match = channels.find((c) => c.kind === 'video' && (String(c.id) === wanted || c.name === wanted));
    if (match !== undefined) return match.id;
    const id = Number(wanted);
    return Number.isInteger(id) ? id : undefined;
  }

  /** The canvas the channel is painted on, once its session made it. */
  get canvas(): HTMLCanvasElement | null {
    return this.#stage.querySelector('canvas');
  }

  /** The picture's size as decoded (`0` before the first frame). */
  get videoWidth(): number {
    return this.canvas?.width ?? 0;
  }

  get videoHeight(): number {
    return this.canvas?.height ?? 0;
  }

  /** The picture's state: `waiting`, `live` or `stale`, with the age of what is on screen. */
  get picture(): PictureState {
    return { kind: this.#picture.kind, ageMs: this.#currentAge() };
  }

  /** What is shown over the picture now. */
  get overlay(): VideoOverlay {
    return (this.getAttribute('overlay') as VideoOverlay | null) ?? 'none';
  }

  /**
   * Shows this element's channel of `connection`, whose `container` option is `dock`: the
   * channel's area (made by each session in `dock`) moves into this element, and the connection's
   * picture and camera reports drive the overlay. Returns the function that detaches (also called
   * by a later `attach`).
   */
  attach(connection: PilotConnection, dock: HTMLElement): () => void {
    this.detach();
    const observer = new MutationObserver(() => this.#adopt());
    observer.observe(dock, { childList: true });
    const stops = [
      () => observer.disconnect(),
      connection.on('source', (channel, state, reason) => {
        if (channel !== this.channelId) return;
        this.#source = { state, reason };
        this.#render();
        this.#emit<SvcSourceDetail>('svc-source', { channel, state, reason });
      }),
      onPicture(connection, (channel, state) => {
        if (channel === this.channelId) this.#setPicture(state);
      }),
      connection.on('paint', (channel) => {
        // The first paint ends "waiting" even before the stale watch reports.
        if (channel === this.channelId && this.#picture.kind === 'waiting')
          this.#setPicture({ kind: 'live', ageMs: Number.NaN });
      }),
      connection.on('state', (state) => {
        if (state === 'connected') this.#adopt();
        else if (state !== 'connecting' && state !== 'idle') this.#reset();
      }),
    ];
    const stop = () => {
      for (const s of stops) s();
      if (this.#attached?.stop === stop) this.#attached = undefined;
    };
    this.#attached = { connection, dock, stop };
    this.#reset();
    this.#adopt();
    return stop;
  }

  /** Stops showing the connection's channel (the area stays where it is until its session ends). */
  detach(): void {
    this.#attached?.stop();
    this.#attached = undefined;
  }

  /** Full screen on, or off when on. */
  async toggleFullscreen(): Promise<void> {
    const document = this.ownerDocument;
    if (document.fullscreenElement === this) await document.exitFullscreen();
    else await this.requestFullscreen();
  }

  attributeChangedCallback(): void {
    this.#reset();
    this.#adopt();
  }

  disconnectedCallback(): void {
    this.#stopAgeTimer();
  }

  /** Moves the channel's area from the dock into the stage, if it is there. */
  #adopt(): void {
    const attached = this.#attached;
    const id = this.channelId;
    if (attached === undefined || id === undefined) return;
    // The robot's word on the camera may have come before this view attached.
    if (this.#source === undefined) {
      const known = attached.connection.source(id);
      if (known !== undefined) {
        this.#source = known;
        this.#render();
      }
    }
    for (const child of [...attached.dock.children]) {
      if (child instanceof HTMLElement && child.dataset.svcChannel === String(id)) {
        for (const old of [...this.#stage.children]) if (old !== child) old.remove();
        this.#stage.append(child);
      }
    }
  }

  /** A new session (or none): what was known of the last one no longer holds. */
  #reset(): void {
    this.#source = undefined;
    this.#picture = { kind: 'waiting', ageMs: Number.NaN, atMs: 0 };
    this.#stopAgeTimer();
    this.#render();
  }

  #setPicture(state: PictureState): void {
    const before = this.#picture.kind;
    this.#picture = { ...state, atMs: performance.now() };
    if (state.kind === 'stale') this.#startAgeTimer();
    else this.#stopAgeTimer();
    this.#render();
    if (state.kind !== before || state.kind === 'stale')
      this.#emit<SvcPictureDetail>('svc-picture', {
        channel: this.channelId ?? -1,
        kind: state.kind,
        ageMs: state.ageMs,
      });
  }

  #currentAge(): number {
    const p = this.#picture;
    return p.kind === 'stale' ? p.ageMs + (performance.now() - p.atMs) : p.ageMs;
  }

  #startAgeTimer(): void {
    if (this.#ageTimer !== undefined) return;
    const view = this.ownerDocument.defaultView;
    if (view === null) return;
    this.#ageTimer = view.setInterval(() => this.#render(), AGE_REDRAW_MS);
  }

  #stopAgeTimer(): void {
    if (this.#ageTimer === undefined) return;
    this.ownerDocument.defaultView?.clearInterval(this.#ageTimer);
    this.#ageTimer = undefined;
  }

  /** What to show: camera trouble first, then a frozen picture, then "waiting". */
  #render(): void {
    const source = this.#source;
    let kind: VideoOverlay = 'none';
    let title = '';
    let detail = '';
    if (source !== undefined && source.state !== 'live') {
      kind = source.state;
      title = source.state === 'offline' ? 'Camera offline' : 'No video from the camera';
      detail = source.reason ?? '';
      // A picture still on screen is the camera's last: say how old it is, and what that means.
      if (this.#picture.kind === 'stale') {
        detail = `${detail}${detail === '' ? '' : ' · '}the picture shown is ${formatMs(this.#currentAge())} old; driving commands are held.`;
      }
    } else if (this.#picture.kind === 'stale') {
      kind = 'stale';
      title = `Picture frozen: ${formatMs(this.#currentAge())} old`;
      detail = 'Driving commands are held until the picture is live again.';
    } else if (this.#picture.kind === 'waiting') {
      kind = 'waiting';
      title = 'Waiting for video…';
    }
    this.setAttribute('picture', this.#picture.kind);
    this.setAttribute('overlay', kind);
    this.#overlay.hidden = kind === 'none';
    this.#overlay.dataset.kind = kind;
    if (this.#title.textContent !== title) this.#title.textContent = title;
    if (this.#detail.textContent !== detail) this.#detail.textContent = detail;
  }

  #emit<T>(type: string, detail: T): void {
    this.dispatchEvent(new CustomEvent<T>(type, { detail, bubbles: true, composed: true }));
  }
}
