import { systemClock } from '@svc/runtime';
import type { ControlChannel, ControlRole } from '@svc/wire';
import { PilotConnection } from '../connection/connection.js';
import type { PilotToken, QosProfileName } from '../connection/options.js';
import type {
  ControlPending,
  ControlRequest,
  ControlResult,
  DriverSlot,
  HandoverAvailability,
} from '../connection/signal-session.js';
import { isOfferError, type RobotOffer, SignalSession } from '../connection/signal-session.js';
import type { PilotConnectionState } from '../connection/state.js';
import { CHART_CSS, StatsCharts } from './charts.js';
import { type Command, encodeCommand, type GamepadLike } from './command.js';
import { DriveControls } from './controls.js';
import { formatMs, formatRate } from './format.js';
import { HandoverView, personName } from './handover.js';
import { History, hudItems, pathText, RateTracker } from './hud.js';
import { type Refusal, refusal, refusalCodeOfConnection, refusalCodeOfOffer } from './refusal.js';
import { fecKernel, pictureAgeOf, sendCommand } from './sdk.js';
import { SensorBoard } from './sensors.js';
import { PILOT_CSS } from './styles.js';
import { SVC_VIDEO_TAG, type SvcPictureDetail, type SvcVideoElement } from './svc-video.js';

/** The tag name of {@link SvcPilotElement}. */
export const SVC_PILOT_TAG = 'svc-pilot';

/** The QoS profiles the switch offers. */
const PROFILES: readonly QosProfileName[] = ['latency', 'balanced', 'quality'];
/** The HUD and the sensor panel are redrawn this often, ms. */
const HUD_INTERVAL_MS = 500;
/** A chart sample is taken this often, ms. */
const CHART_INTERVAL_MS = 1000;

/** `detail` of the `svc-state` event. */
export interface SvcStateDetail {
  readonly state: PilotConnectionState;
  readonly detail: string | undefined;
}

/** `detail` of the `svc-role` event: this session's role and who drives. */
export interface SvcRoleDetail {
  readonly role: ControlRole | undefined;
  /**
   * Who drives, as shown: `you`, the driver's name (or id), `nobody`, `someone else` (a `drive`
   * session admitted as an observer, before the cloud said who), or `undefined` when not known.
   */
  readonly driver: string | undefined;
}

/** `detail` of the `svc-driver` event: who holds the driver slot (`null`: nobody). */
export type SvcDriverDetail = DriverSlot | null;

/** `detail` of the `svc-control-request` event: someone asks this session, the driver, for the slot. */
export type SvcControlRequestDetail = ControlRequest;

/** `detail` of the `svc-control-pending` event: this session's request waits for the driver. */
export type SvcControlPendingDetail = ControlPending;

/**
 * `detail` of the `svc-control-result` event: how a request ended (`outcome`, and the service's
 * words in `message`), or `outcome: 'error'` when the service refused a control message outright.
 */
export type SvcControlResultDetail =
  | ControlResult
  | { readonly requestId: undefined; readonly outcome: 'error'; readonly message: string };

/** `detail` of the `svc-handover` event: whether the driver slot can change hands from this page. */
export type SvcHandoverDetail = HandoverAvailability;

/** `detail` of the `svc-stale` event. */
export interface SvcStaleDetail {
  readonly channel: number;
  readonly stale: boolean;
  readonly ageMs: number;
}

/** `detail` of the `svc-command` event: a command the controls made, and whether it went out. */
export interface SvcCommandDetail {
  readonly command: Command;
  /** The exact bytes sent (UTF-8 JSON). */
  readonly json: string;
  readonly sent: boolean;
}

/** `detail` of the `svc-refusal` event (`undefined` when a refusal shown before is over). */
export type SvcRefusalDetail = Refusal | undefined;

/**
 * `<svc-pilot robot="rover-7" token="…">`: the whole cockpit for one robot. It owns a
 * {@link PilotConnection} and shows every video channel (one at a time with a camera selector, or
 * side by side), a HUD (picture age, bitrate, frame rate, resolution, codec, RTT, loss and repair,
 * ABR reason, path, role, who drives, FEC kernel) that turns red while the picture is frozen, a
 * stats panel with the last minute of picture age, bitrate and loss, a sensor panel, the drive
 * controls (keyboard, gamepad, stop button; `docs/protocol/commands.md`), a QoS profile switch and
 * a message for every refusal that says what to do. Who drives is shown ("Driving: you" or the
 * driver's name); through svc-cloud's signalling an observer with a `drive` token may request control
 * (the driver gets a prompt with Grant / Refuse and the time left) or take it over (an org admin or
 * owner; anyone else is shown the service's refusal), the driver may release it, and every outcome
 * is shown as a short line.
 *
 * Attributes: `robot`, `token` (or the `token` property, which also takes a function, for example
 * `() => fetchSessionToken(…)`), `signal-url`
 * (default `ws[s]://<this host>/ws`), `scope` (`drive` or `observe`: what the token asks for),
 * `layout` (`single` or `grid`), `keyboard` (`off` to ignore the keys), `command-channel` (default
 * the robot's first). Events (bubbling, composed; see `docs/pilot.md`): `svc-state`, `svc-role`,
 * `svc-stale`, `svc-refusal`, `svc-command`, `svc-picture`, `svc-source`, `svc-driver`,
 * `svc-handover`, `svc-control-request`, `svc-control-pending`, `svc-control-result`.
 */
export class SvcPilotElement extends HTMLElement {
  static readonly observedAttributes = ['robot', 'token', 'signal-url', 'layout', 'scope'];
  readonly #root: ShadowRoot;
  readonly #parts: Parts;
  readonly #handover: HandoverView;
  readonly #controls: DriveControls;
  readonly #sensors = new SensorBoard();
  readonly #rates = new RateTracker();
  readonly #history = new History();
  readonly #lastAge = new Map<number, number>();
  readonly #stale = new Set<number>();
  #token: PilotToken | undefined;
  #connection: PilotConnection | undefined;
  #stopListening: (() => void)[] = [];
  #offer: RobotOffer | undefined;
  #refusal: Refusal | undefined;
  #role: ControlRole | undefined;
  #videos = new Map<number, SvcVideoElement>();
  #selected: number | undefined;
  #charts: StatsCharts | undefined;
  #timers: number[] = [];
  #lastChartMs = 0;
  #fecKernel: string | undefined;
  #restartQueued = false;
  readonly #onKeyDown = (event: KeyboardEvent) => this.#key(event, true);
  readonly #onKeyUp = (event: KeyboardEvent) => this.#key(event, false);
  readonly #onBlur = () => this.#controls.release();
  readonly #onVisibility = () => {
    if (this.ownerDocument.visibilityState === 'hidden') this.#controls.release();
  };

  constructor() {
    super();
    this.#root = this.attachShadow({ mode: 'open' });
    this.#handover = new HandoverView(this.ownerDocument, {
      request: () => this.requestControl(),
      take: () => this.takeControl(),
      release: () => this.releaseControl(),
      answer: (grant) => this.#answer(grant),
    });
    this.#parts = buildParts(this.#root, this.#handover);
    this.#controls = new DriveControls({
      clock: systemClock,
      send: (command, { always }) => this.#send(command, always),
      getGamepads: () => this.#gamepads(),
      onCommand: (command, sent) =>
        this.#emit<SvcCommandDetail>('svc-command', { command, json: encodeCommand(command), sent }),
    });
    const p = this.#parts;
    p.stop.addEventListener('click', () => this.#controls.stop());
    p.camera.addEventListener('change', () => this.#select(Number(p.camera.value)));
    p.sideBySide.addEventListener('change', () =>
      this.setAttribute('layout', p.sideBySide.checked ? 'grid' : 'single'),
    );
    p.profile.addEventListener('change', () => this.#chooseProfile(p.profile.value as QosProfileName));
    this.#root.addEventListener('svc-picture', (event) =>
      this.#pictureChanged((event as CustomEvent<SvcPictureDetail>).detail),
    );
  }

  /** The session token, or a function that gets a current one before every attempt. */
  get token(): PilotToken | undefined {
    return this.#token ?? this.getAttribute('token') ?? undefined;
  }

  set token(token: PilotToken | undefined) {
    this.#token = token;
    this.#queueRestart();
  }

  /** The connection of the current robot, once started. */
  get connection(): PilotConnection | undefined {
    return this.#connection;
  }

  /** The refusal shown now, if any. */
  get refusal(): Refusal | undefined {
    return this.#refusal;
  }

  /** The drive controls (for pages that add their own input). */
  get controls(): DriveControls {
    return this.#controls;
  }

  /** Sends a stop command at once (as the stop button does). */
  stop(): void {
    this.#controls.stop();
  }

  /**
   * Asks the driver for control (the "Request control" button); `false` when it cannot be asked
   * now (see `PilotConnection.requestControl`).
   */
  requestControl(): boolean {
    const asked = this.#connection?.requestControl() ?? false;
    if (asked) this.#say('Asking the driver for control…', 'pending');
    return asked;
  }

  /**
   * Takes control over at once (the "Take control" button): svc-cloud allows it to an org admin or
   * owner and answers anyone else with a refusal that is shown. `false` when it cannot be sent.
   */
  takeControl(): boolean {
    const sent = this.#connection?.takeControl() ?? false;
    if (sent) this.#say('Taking control…', 'pending');
    return sent;
  }

  /** Gives control up (the "Release control" button); `false` when this page does not drive. */
  releaseControl(): boolean {
    const sent = this.#connection?.releaseControl() ?? false;
    if (sent) this.#say('You released control.', 'released');
    return sent;
  }

  /** Answers the request shown in the prompt. */
  #answer(grant: boolean): void {
    const connection = this.#connection;
    const request = connection?.controlRequest;
    if (connection === undefined || request === undefined) {
      this.#updateHandover();
      return;
    }
    if (connection.answerControl(request.requestId, grant))
      this.#say(
        grant
          ? `You handed control to ${personName(request.user)}.`
          : `You refused ${personName(request.user)}'s request.`,
        grant ? 'granted' : 'refused',
      );
    this.#updateHandover();
  }

  connectedCallback(): void {
    const document = this.ownerDocument;
    const view = document.defaultView;
    document.addEventListener('keydown', this.#onKeyDown);
    document.addEventListener('keyup', this.#onKeyUp);
    document.addEventListener('visibilitychange', this.#onVisibility);
    view?.addEventListener('blur', this.#onBlur);
    if (view !== null) this.#timers.push(view.setInterval(() => this.#tick(), HUD_INTERVAL_MS));
    this.#applyLayout();
    this.#queueRestart();
  }

  disconnectedCallback(): void {
    const document = this.ownerDocument;
    const view = document.defaultView;
    document.removeEventListener('keydown', this.#onKeyDown);
    document.removeEventListener('keyup', this.#onKeyUp);
    document.removeEventListener('visibilitychange', this.#onVisibility);
    view?.removeEventListener('blur', this.#onBlur);
    for (const timer of this.#timers.splice(0)) view?.clearInterval(timer);
    this.#end();
  }

  attributeChangedCallback(name: string, before: string | null, after: string | null): void {
    if (before === after) return;
    if (name === 'layout') this.#applyLayout();
    else this.#queueRestart();
  }

  /** Attribute and property changes of one task restart the connection once. */
  #queueRestart(): void {
    if (this.#restartQueued) return;
    this.#restartQueued = true;
    queueMicrotask(() => {
      this.#restartQueued = false;
      if (this.isConnected) this.#restart();
    });
  }

  #restart(): void {
    this.#end();
    const robotId = this.getAttribute('robot') ?? '';
    this.#parts.robot.textContent = robotId;
    const token = this.token;
    if (robotId === '') {
      this.#showState('no robot');
      return;
    }
    if (token === undefined || token === '') {
      this.#setRefusal(refusal('no-token'));
      return;
    }
    const connection: PilotConnection = new PilotConnection({
      signalUrl: this.getAttribute('signal-url') ?? defaultSignalUrl(this.ownerDocument),
      robotId,
      token,
      container: this.#parts.dock,
      openSignalling: (options) => {
        const signalling = new SignalSession(options);
        signalling.offer().catch((err: unknown) => {
          const code = isOfferError(err) ? refusalCodeOfOffer(err.code) : undefined;
          if (code !== undefined && connection === this.#connection)
            this.#setRefusal(refusal(code, err instanceof Error ? err.message : undefined));
        });
        return signalling;
      },
    });
    this.#connection = connection;
    this.#stopListening = [
      connection.on('state', (state, detail) => this.#stateChanged(connection, state, detail)),
      connection.on('offer', (offer) => {
        this.#offer = offer;
      }),
      connection.on('sensor', (channel, bytes, name) =>
        this.#sensors.record(channel, name, bytes, performance.now()),
      ),
      connection.on('paint', (channel, report) => this.#lastAge.set(channel, pictureAgeOf(report))),
      connection.on('driver', (driver) => {
        this.#showDriver();
        this.#emit<SvcDriverDetail>('svc-driver', driver);
      }),
      connection.on('handover', (availability) => {
        this.#updateHandover();
        this.#emit<SvcHandoverDetail>('svc-handover', availability);
      }),
      connection.on('control-request', (request) => {
        this.#updateHandover();
        this.#emit<SvcControlRequestDetail>('svc-control-request', request);
      }),
      connection.on('control-pending', (pending) => {
        this.#say(`Waiting for ${personName(pending.driver)} to answer`, 'pending', pending.expiresInMs);
        this.#emit<SvcControlPendingDetail>('svc-control-pending', pending);
      }),
      connection.on('control-result', (result) => {
        this.#say(result.message, result.outcome);
        this.#updateHandover();
        this.#emit<SvcControlResultDetail>('svc-control-result', result);
      }),
      connection.on('control-error', (message) => {
        this.#say(message, 'error');
        this.#emit<SvcControlResultDetail>('svc-control-result', {
          requestId: undefined,
          outcome: 'error',
          message,
        });
      }),
    ];
    connection.connect();
  }

  /** Closes the connection (saying `bye`) and forgets the robot's views. */
  #end(): void {
    this.#controls.disable();
    for (const stop of this.#stopListening.splice(0)) stop();
    this.#connection?.close();
    this.#connection = undefined;
    this.#offer = undefined;
    this.#role = undefined;
    this.#setRefusal(undefined);
    this.#setVideos([]);
    this.#sensors.clear();
    this.#rates.clear();
    this.#history.clear();
    this.#lastAge.clear();
    this.#stale.clear();
    this.removeAttribute('stale');
    this.#handover.clear();
    this.#showDriver();
    this.#updateHandover();
  }

  #stateChanged(connection: PilotConnection, state: PilotConnectionState, detail: string | undefined): void {
    if (connection !== this.#connection) return;
    this.#showState(state === 'connected' || detail === undefined ? state : `${state}: ${detail}`);
    this.#emit<SvcStateDetail>('svc-state', { state, detail });
    const given = connection.refusal;
    switch (state) {
      case 'connected': {
        if (this.#refusal !== undefined && !this.#refusal.final) this.#setRefusal(undefined);
        this.#setVideos(connection.channels.filter((c) => c.kind === 'video'));
        const role = connection.role;
        this.#setRole(role);
        if (role === 'driver') this.#controls.enable();
        else this.#controls.disable();
        const slotHeld =
          given?.code === 'driver-slot-held' || (role === 'observer' && this.#requestedScope() === 'drive');
        if (slotHeld) this.#setRefusal(refusal('slot-taken', given?.message));
        return;
      }
      case 'denied':
        this.#controls.disable();
        this.#setRole(undefined);
        this.#setRefusal(
          given === undefined
            ? refusal(this.#refusal?.code ?? 'refused', this.#refusal?.detail ?? detail, true)
            : refusal(refusalCodeOfConnection(given.code), given.message, true),
        );
        return;
      case 'reconnecting':
        this.#controls.disable();
        this.#setRole(undefined);
        // The robot has been offline since the page opened: say so while the connection asks again.
        if (given?.code === 'robot-offline') this.#setRefusal(refusal('robot-offline', given.message));
        return;
      case 'idle':
      case 'connecting':
      case 'closed':
        this.#controls.disable();
        this.#setRole(undefined);
        return;
      default:
        state satisfies never;
    }
  }

  /** What the token asks for: the `scope` attribute, else the token's own claim, else `drive`. */
  #requestedScope(): string {
    const attribute = this.getAttribute('scope');
    if (attribute !== null) return attribute;
    const token = this.token;
    return (typeof token === 'string' ? scopeClaim(token) : undefined) ?? 'drive';
  }

  #setRole(role: ControlRole | undefined): void {
    this.#showDriver();
    this.#updateHandover();
    if (role === this.#role) return;
    this.#role = role;
    this.#parts.stop.disabled = role !== 'driver';
    this.#parts.profile.disabled = role === undefined;
    this.#parts.profile.title =
      role === 'driver'
        ? 'The profile of every session of this robot'
        : 'Your own presentation only (the driver chooses what the robot sends)';
    this.#emit<SvcRoleDetail>('svc-role', { role, driver: this.#driver() });
  }

  #driver(): SvcRoleDetail['driver'] {
    const slot = this.#connection?.driver;
    if (slot === null) return 'nobody';
    if (slot !== undefined) return slot.self ? 'you' : personName(slot.user);
    if (this.#role === 'driver') return 'you';
    if (this.#role === 'observer' && this.#requestedScope() === 'drive') return 'someone else';
    return undefined;
  }

  /** The bar's "Driving: …". */
  #showDriver(): void {
    const driver = this.#driver();
    this.#parts.driving.textContent = driver === undefined ? '' : `Driving: ${driver}`;
    this.#parts.driving.hidden = driver === undefined;
  }

  /** The handover buttons, the prompt and the notice, as the connection stands now. */
  #updateHandover(): void {
    const connection = this.#connection;
    const mayAsk =
      connection?.state === 'connected' &&
      connection.role === 'observer' &&
      this.#requestedScope() === 'drive';
    this.#handover.render(connection, mayAsk);
  }

  /** Shows one short line of what happened to a control request. */
  #say(text: string, kind: string, expiresInMs?: number): void {
    this.#handover.say(text, kind, expiresInMs);
    this.#updateHandover();
  }

  #setRefusal(shown: Refusal | undefined): void {
    const before = this.#refusal;
    this.#refusal = shown;
    const box = this.#parts.refusal;
    box.hidden = shown === undefined;
    if (shown !== undefined) {
      box.dataset.code = shown.code;
      box.dataset.final = String(shown.final);
      this.#parts.refusalTitle.textContent = shown.title;
      this.#parts.refusalAction.textContent = shown.action;
      this.#parts.refusalDetail.textContent = shown.detail ?? '';
    }
    if (before !== shown && (before !== undefined || shown !== undefined))
      this.#emit<SvcRefusalDetail>('svc-refusal', shown);
  }

  #showState(text: string): void {
    this.#parts.state.textContent = text;
  }

  /** One `<svc-video>` per video channel (kept when a reconnect brings the same channels). */
  #setVideos(channels: readonly ControlChannel[]): void {
    const ids = channels.map((c) => c.id);
    const same = ids.length === this.#videos.size && ids.every((id) => this.#videos.has(id));
    const connection = this.#connection;
    if (same && connection !== undefined) return;
    for (const video of this.#videos.values()) {
      video.detach();
      video.remove();
    }
    this.#videos = new Map();
    const { camera, videos, dock } = this.#parts;
    camera.replaceChildren();
    for (const channel of channels) {
      const video = this.ownerDocument.createElement(SVC_VIDEO_TAG) as SvcVideoElement;
      video.setAttribute('channel', String(channel.id));
      video.setAttribute('aria-label', `Camera ${channel.name}`);
      video.dataset.name = channel.name;
      videos.append(video);
      if (connection !== undefined) video.attach(connection, dock);
      this.#videos.set(channel.id, video);
      const option = this.ownerDocument.createElement('option');
      option.value = String(channel.id);
      option.textContent = channel.name;
      camera.append(option);
    }
    camera.disabled = channels.length < 2;
    const keep = this.#selected !== undefined && this.#videos.has(this.#selected);
    this.#select(keep ? (this.#selected as number) : ids[0]);
  }

  /** Shows `channel` (in the single layout) and makes it the HUD's. */
  #select(channel: number | undefined): void {
    if (channel !== this.#selected) this.#history.clear();
    this.#selected = channel;
    if (channel !== undefined) this.#parts.camera.value = String(channel);
    this.#applyLayout();
    this.#updateStale();
  }

  #applyLayout(): void {
    const grid = this.getAttribute('layout') === 'grid';
    this.#parts.videos.dataset.layout = grid ? 'grid' : 'single';
    this.#parts.sideBySide.checked = grid;
    for (const [id, video] of this.#videos) video.hidden = !grid && id !== this.#selected;
  }

  #pictureChanged(detail: SvcPictureDetail): void {
    const wasStale = this.#stale.has(detail.channel);
    if (detail.kind === 'stale') this.#stale.add(detail.channel);
    else this.#stale.delete(detail.channel);
    if (wasStale !== (detail.kind === 'stale'))
      this.#emit<SvcStaleDetail>('svc-stale', {
        channel: detail.channel,
        stale: detail.kind === 'stale',
        ageMs: detail.ageMs,
      });
    this.#updateStale();
  }

  /** The cockpit is red while a channel in view is frozen. */
  #updateStale(): void {
    const grid = this.getAttribute('layout') === 'grid';
    const stale = [...this.#stale].some((id) => grid || id === this.#selected);
    this.toggleAttribute('stale', stale);
  }

  #chooseProfile(profile: QosProfileName): void {
    const connection = this.#connection;
    if (connection === undefined || connection.state !== 'connected' || !connection.setQos(profile)) {
      // Nothing was asked: show the robot's profile again.
      this.#parts.profile.value = connection?.stats().profile ?? 'balanced';
      return;
    }
    this.#emit('svc-qos', { profile });
  }

  #send(command: Command, always: boolean): boolean {
    const connection = this.#connection;
    if (connection === undefined || connection.state !== 'connected') return false;
    const wanted = this.getAttribute('command-channel');
    const channel = connection.channels.find(
      (c) => c.kind === 'command' && (wanted === null || c.name === wanted || String(c.id) === wanted),
    );
    if (channel === undefined) return false;
    return sendCommand(connection, channel.id, encodeCommand(command), always);
  }

  #gamepads(): readonly (GamepadLike | null)[] {
    const navigator = this.ownerDocument.defaultView?.navigator;
    return typeof navigator?.getGamepads === 'function' ? navigator.getGamepads() : [];
  }

  #key(event: KeyboardEvent, down: boolean): void {
    if (this.getAttribute('keyboard') === 'off' || event.defaultPrevented) return;
    if (down && (event.altKey || event.ctrlKey || event.metaKey || isEditable(event.composedPath()[0])))
      return;
    const handled = down ? this.#controls.keyDown(event.key) : this.#controls.keyUp(event.key);
    if (handled && this.#controls.enabled) event.preventDefault();
  }

  /** The HUD, the stats panel and the sensor panel, redrawn. */
  #tick(): void {
    const connection = this.#connection;
    if (connection === undefined) return;
    this.#updateHandover();
    const now = performance.now();
    const stats = connection.stats();
    const rates = this.#rates.update(stats, now);
    const selected = this.#selected;
    const video = selected === undefined ? undefined : this.#videos.get(selected);
    const channel = connection.channels.find((c) => c.id === selected);
    const picture = video?.picture;
    const pictureAgeMs =
      picture?.kind === 'stale'
        ? picture.ageMs
        : selected === undefined
          ? Number.NaN
          : (this.#lastAge.get(selected) ?? Number.NaN);
    this.#fecKernel ??= fecKernel();
    const key = selected === undefined ? undefined : String(selected);
    const channelRates = key === undefined ? undefined : rates.get(key);
    renderHud(
      this.#parts.hud,
      hudItems(stats, channelRates, {
        channelId: key,
        codec: channel?.codec,
        width: video?.videoWidth ?? 0,
        height: video?.videoHeight ?? 0,
        pictureAgeMs,
        stale: picture?.kind === 'stale',
        role: this.#role,
        driver: this.#driver(),
        path: pathText(stats),
        profile: stats.profile,
        fecKernel: this.#fecKernel,
      }),
    );
    const shown = connection.role === 'driver' ? stats.profile : (connection.presentation ?? stats.profile);
    if (shown !== undefined && this.#root.activeElement !== this.#parts.profile)
      this.#parts.profile.value = shown;
    renderSensors(this.#parts.sensors, this.#sensors.views(now));
    if (now - this.#lastChartMs >= CHART_INTERVAL_MS && connection.state === 'connected') {
      this.#lastChartMs = now;
      this.#history.push(Date.now(), pictureAgeMs, channelRates?.bitrateBps, channelRates?.chunkLoss);
      this.#chartsReady()?.update(this.#history);
    }
  }

  /** The charts, made on first use (uPlot measures the page, so not before the element is shown). */
  #chartsReady(): StatsCharts | undefined {
    if (this.#charts === undefined && this.#parts.stats.open)
      this.#charts = new StatsCharts(this.#parts.charts);
    return this.#charts;
  }

  #emit<T>(type: string, detail: T): void {
    this.dispatchEvent(new CustomEvent<T>(type, { detail, bubbles: true, composed: true }));
  }
}

/** The elements of the cockpit's shadow root. */
interface Parts {
  readonly robot: HTMLElement;
  readonly state: HTMLElement;
  readonly camera: HTMLSelectElement;
  readonly sideBySide: HTMLInputElement;
  readonly profile: HTMLSelectElement;
  readonly stop: HTMLButtonElement;
  readonly driving: HTMLElement;
  readonly refusal: HTMLElement;
  readonly refusalTitle: HTMLElement;
  readonly refusalAction: HTMLElement;
  readonly refusalDetail: HTMLElement;
  readonly videos: HTMLElement;
  readonly hud: HTMLElement;
  readonly stats: HTMLDetailsElement;
  readonly charts: HTMLElement;
  readonly sensors: HTMLElement;
  readonly dock: HTMLElement;
}

function buildParts(root: ShadowRoot, handover: HandoverView): Parts {
  const document = root.ownerDocument;
  const make = <K extends keyof HTMLElementTagNameMap>(
    tag: K,
    props: Partial<Record<'className' | 'textContent', string>> = {},
    attributes: Record<string, string> = {},
  ): HTMLElementTagNameMap[K] => {
    const element = document.createElement(tag);
    if (props.className !== undefined) element.className = props.className;
    if (props.textContent !== undefined) element.textContent = props.textContent;
    for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
    return element;
  };
  const labelled = (text: string, control: HTMLElement) => {
    const label = make('label');
    label.append(text, control);
    return label;
  };
  const style = make('style', { textContent: PILOT_CSS + CHART_CSS });
  const robot = make('span', { className: 'robot' });
  const state = make('span', { className: 'state', textContent: 'starting' }, { role: 'status' });
  const camera = make('select', {}, { 'aria-label': 'Camera' });
  const sideBySide = make('input', {}, { type: 'checkbox' });
  const profile = make('select', {}, { 'aria-label': 'QoS profile' });
  for (const name of PROFILES) profile.append(new Option(name, name));
  profile.disabled = true;
  const stop = make(
    'button',
    { className: 'stop', textContent: 'Stop' },
    { type: 'button', 'aria-label': 'Stop the robot' },
  );
  stop.disabled = true;
  const driving = make('span', { className: 'driving' });
  driving.hidden = true;
  const bar = make('div', { className: 'bar' });
  bar.append(
    robot,
    state,
    driving,
    labelled('Camera', camera),
    labelled('Side by side', sideBySide),
    labelled('Profile', profile),
    make('span', { className: 'spacer' }),
    handover.request,
    handover.take,
    handover.release,
    stop,
  );
  const refusalTitle = make('strong');
  const refusalAction = make('p');
  const refusalDetail = make('p', { className: 'detail' });
  const refusal = make('div', { className: 'refusal' }, { role: 'alert' });
  refusal.hidden = true;
  refusal.append(refusalTitle, refusalAction, refusalDetail);
  const videos = make('div', { className: 'videos' });
  const hud = make('dl', { className: 'hud' }, { 'aria-label': 'Heads-up display' });
  const stats = make('details', { className: 'stats' });
  stats.open = true;
  const charts = make('div', { className: 'charts' });
  stats.append(make('summary', { textContent: 'Statistics' }), charts);
  const sensors = make('section', { className: 'sensors' }, { 'aria-label': 'Sensors' });
  const side = make('div', { className: 'side' });
  side.append(hud, stats, sensors);
  const main = make('div', { className: 'main' });
  main.append(videos, side);
  const dock = make('div', { className: 'dock' }, { 'aria-hidden': 'true' });
  root.append(style, bar, handover.reason, handover.prompt, handover.notice, refusal, main, dock);
  return {
    robot,
    state,
    camera,
    sideBySide,
    profile,
    stop,
    driving,
    refusal,
    refusalTitle,
    refusalAction,
    refusalDetail,
    videos,
    hud,
    stats,
    charts,
    sensors,
    dock,
  };
}

/** Writes the HUD's `<dt>`/`<dd>` pairs, reusing the nodes (each `dd` has `data-key`). */
function renderHud(hud: HTMLElement, items: ReturnType<typeof hudItems>): void {
  const document = hud.ownerDocument;
  for (const item of items) {
    let value = hud.querySelector<HTMLElement>(`dd[data-key="${item.key}"]`);
    if (value === null) {
      const term = document.createElement('dt');
      term.textContent = item.label;
      value = document.createElement('dd');
      value.dataset.key = item.key;
      hud.append(term, value);
    }
    if (value.textContent !== item.value) value.textContent = item.value;
  }
}

/** Writes the sensor panel: per channel its name, rate, age and latest message. */
function renderSensors(panel: HTMLElement, views: ReturnType<SensorBoard['views']>): void {
  const document = panel.ownerDocument;
  if (views.length === 0) {
    if (panel.querySelector('.empty') === null) {
      const empty = document.createElement('p');
      empty.className = 'empty';
      empty.textContent = 'No sensor messages yet.';
      panel.replaceChildren(empty);
    }
    return;
  }
  panel.querySelector('.empty')?.remove();
  for (const view of views) {
    let section = panel.querySelector<HTMLElement>(`section[data-sensor="${view.channel}"]`);
    if (section === null) {
      section = document.createElement('section');
      section.className = 'sensor';
      section.dataset.sensor = String(view.channel);
      section.dataset.name = view.name;
      const heading = document.createElement('h4');
      const name = document.createElement('span');
      name.textContent = view.name;
      const meta = document.createElement('span');
      meta.className = 'meta';
      heading.append(name, meta);
      section.append(heading, document.createElement('pre'));
      panel.append(section);
    }
    const meta = section.querySelector('.meta') as HTMLElement;
    const pre = section.querySelector('pre') as HTMLElement;
    meta.textContent = `${formatRate(view.rateHz, 'msg/s')} · ${formatMs(view.ageMs)} ago · ${view.bytes} bytes`;
    pre.dataset.format = view.payload.kind;
    if (pre.textContent !== view.payload.text) pre.textContent = view.payload.text;
  }
}

/** `ws://<host>/ws` (or `wss:` on an https page): svc-cloud's signalling on the page's own host. */
function defaultSignalUrl(document: Document): string {
  const location = document.location;
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
}

/** The `scope` claim of a JWT, read without verifying (only to word a notice). */
function scopeClaim(token: string): string | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/'));
    const scope = (JSON.parse(json) as { scope?: unknown }).scope;
    return typeof scope === 'string' ? scope : undefined;
  } catch {
    return undefined;
  }
}

/** Whether keys typed at `target` belong to it (a text field, a select, an editable element). */
function isEditable(target: EventTarget | undefined): boolean {
  if (target === undefined || target === null || !('tagName' in target)) return false;
  const element = target as HTMLElement;
  return (
    element.isContentEditable ||
    element.tagName === 'INPUT' ||
    element.tagName === 'TEXTAREA' ||
    element.tagName === 'SELECT'
  );
}
