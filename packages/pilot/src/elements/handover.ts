import type { PilotConnection } from '../connection/connection.js';
import type { SlotUser } from '../connection/signal-session.js';

/** What the handover view's buttons do (the element's calls). */
export interface HandoverActions {
  request(): void;
  take(): void;
  release(): void;
  answer(grant: boolean): void;
}

/** A short line of control news, and when it runs out (a pending request's countdown). */
interface Notice {
  readonly text: string;
  /** A `control-result` outcome, `pending`, `released` or `error`: styles key on it. */
  readonly kind: string;
  readonly deadlineMs?: number;
}

/**
 * The cockpit's driver-handover controls: "Request control", "Take control" and "Release control"
 * (in the bar), why handover is unavailable when it is, the driver's prompt "<name> asks to
 * drive" with Grant / Refuse and the time left, and one short line of what happened to the last
 * request. It draws from the connection's state each {@link render}; the element wires the events.
 */
export class HandoverView {
  readonly request: HTMLButtonElement;
  readonly take: HTMLButtonElement;
  readonly release: HTMLButtonElement;
  /** Why handover is unavailable now (empty when it is, or when it does not concern this page). */
  readonly reason: HTMLElement;
  readonly prompt: HTMLElement;
  readonly notice: HTMLElement;
  readonly #promptText: HTMLElement;
  readonly #promptTime: HTMLElement;
  #notice: Notice | undefined;

  constructor(document: Document, actions: HandoverActions) {
    const make = <K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string) => {
      const element = document.createElement(tag);
      element.className = className;
      if (text !== undefined) element.textContent = text;
      return element;
    };
    const button = (text: string, className: string, onClick: () => void) => {
      const element = make('button', className, text);
      element.type = 'button';
      element.addEventListener('click', onClick);
      return element;
    };
    this.request = button('Request control', 'handover-action', () => actions.request());
    this.take = button('Take control', 'handover-action', () => actions.take());
    this.release = button('Release control', 'handover-action', () => actions.release());
    for (const action of [this.request, this.take, this.release]) action.hidden = true;
    this.reason = make('p', 'handover-state');
    this.#promptText = make('strong', 'asker');
    this.#promptTime = make('span', 'time-left');
    this.prompt = make('div', 'prompt');
    this.prompt.setAttribute('role', 'alertdialog');
    this.prompt.setAttribute('aria-label', 'Control request');
    this.prompt.hidden = true;
    this.prompt.append(
      this.#promptText,
      this.#promptTime,
      button('Grant', 'grant', () => actions.answer(true)),
      button('Refuse', 'refuse', () => actions.answer(false)),
    );
    this.notice = make('p', 'control-notice');
    this.notice.setAttribute('role', 'status');
    this.notice.setAttribute('aria-label', 'Control');
    this.notice.hidden = true;
  }

  /**
   * Redraws from the connection: the buttons this session may use (`mayAsk`: it observes with a
   * `drive` token), disabled with the reason while handover is unavailable, the prompt while a
   * request waits for this driver, and the notice with its countdown.
   */
  render(connection: PilotConnection | undefined, mayAsk: boolean): void {
    const connected = connection?.state === 'connected';
    const role = connected ? connection?.role : undefined;
    const handover = connection?.handover;
    const why = handover !== undefined && !handover.available ? handover.message : undefined;
    this.request.hidden = !mayAsk;
    this.take.hidden = !mayAsk;
    this.release.hidden = role !== 'driver';
    for (const action of [this.request, this.take, this.release]) {
      action.disabled = why !== undefined;
      action.title = why ?? '';
    }
    this.reason.textContent = why !== undefined && (mayAsk || role === 'driver') ? why : '';
    const request = role === 'driver' ? connection?.controlRequest : undefined;
    this.prompt.hidden = request === undefined;
    if (request !== undefined) {
      this.#promptText.textContent = `${personName(request.user)} asks to drive`;
      this.#promptTime.textContent = `${Math.ceil(request.expiresInMs / 1000)} s left to answer`;
    }
    const notice = this.#notice;
    this.notice.hidden = notice === undefined;
    if (notice === undefined) return;
    this.notice.dataset.kind = notice.kind;
    const left = notice.deadlineMs === undefined ? undefined : notice.deadlineMs - performance.now();
    this.notice.textContent =
      left === undefined ? notice.text : `${notice.text} (${Math.max(0, Math.ceil(left / 1000))} s left)`;
  }

  /** Shows one short line of control news (`expiresInMs`: a countdown is added). */
  say(text: string, kind: string, expiresInMs?: number): void {
    this.#notice = {
      text,
      kind,
      ...(expiresInMs !== undefined && { deadlineMs: performance.now() + expiresInMs }),
    };
  }

  /** Forgets the news (another robot or token). */
  clear(): void {
    this.#notice = undefined;
  }
}

/** A person's name as the cockpit shows it: the display name, else the id. */
export function personName(user: SlotUser): string {
  return user.name ?? user.id;
}
