import type { Logger } from '@svc/runtime';
import type { WebRtcAnswer } from '@svc/transport';
import type { RtcCandidateMessage, RtcReply, RtcSessionMessage } from './signalling/client.js';

/** Candidates kept for a session whose answer is not made yet (a pilot trickles early). */
const MAX_EARLY_CANDIDATES = 64;

/** Options of {@link RtcSetups}. */
export interface RtcSetupsOptions {
  /** Answers an offer (the daemon's `answerRtc`), the local candidates going to `onCandidate`. */
  readonly answer: (request: {
    readonly sdp: string;
    readonly iceServers: RtcSessionMessage['ice_servers'];
    readonly onCandidate: (candidate: string, mid: string) => void;
  }) => Promise<WebRtcAnswer>;
  /** Sends the pilot an answer, a candidate, or why not (through svc-cloud). */
  readonly send: (message: RtcReply) => void;
  readonly logger: Logger;
}

interface Setup {
  answer: WebRtcAnswer | undefined;
  /** The pilot's candidates that came before the answer was made. */
  readonly early: [candidate: string, mid: string][];
  /** Local candidates gathered before the answer went out (the pilot needs the answer first). */
  readonly local: [candidate: string, mid: string][] | undefined;
}

/**
 * The robot's side of WebRTC signalling (`docs/protocol/webrtc.md`): for each `rtc-session`, an
 * answer made by the daemon and sent back, then the candidates both ways, in an order the browser
 * accepts (its own candidates only after the answer, the pilot's kept until there is an answer to
 * give them to). A newer offer for the same session replaces the one being set up.
 */
export class RtcSetups {
  readonly #options: RtcSetupsOptions;
  readonly #setups = new Map<string, Setup>();
  #closed = false;

  constructor(options: RtcSetupsOptions) {
    this.#options = {
      ...options,
      // Candidates keep coming from native code after the daemon stopped: they go nowhere then.
      send: (message) => {
        if (!this.#closed) options.send(message);
      },
    };
  }

  /** svc-cloud's `rtc-session`. */
  offer(message: RtcSessionMessage): void {
    if (this.#closed) return;
    const sessionId = message.session_id;
    this.#setups.get(sessionId)?.answer?.close();
    const local: [string, string][] = [];
    const setup: Setup = { answer: undefined, early: [], local };
    this.#setups.set(sessionId, setup);
    let answered = false;
    const onCandidate = (candidate: string, mid: string) => {
      if (this.#setups.get(sessionId) !== setup) return;
      if (answered) this.#options.send({ type: 'rtc-candidate', session_id: sessionId, candidate, mid });
      else local.push([candidate, mid]);
    };
    this.#options.answer({ sdp: message.sdp, iceServers: message.ice_servers, onCandidate }).then(
      (answer) => {
        if (this.#setups.get(sessionId) !== setup) {
          answer.close();
          return;
        }
        setup.answer = answer;
        this.#options.send({ type: 'rtc-answer', session_id: sessionId, sdp: answer.sdp });
        answered = true;
        for (const [candidate, mid] of local.splice(0)) {
          this.#options.send({ type: 'rtc-candidate', session_id: sessionId, candidate, mid });
        }
        for (const [candidate, mid] of setup.early.splice(0)) answer.addRemoteCandidate(candidate, mid);
        const done = () => {
          if (this.#setups.get(sessionId) === setup) this.#setups.delete(sessionId);
        };
        answer.session.then(done, done);
      },
      (err: unknown) => {
        if (this.#setups.get(sessionId) !== setup) return;
        this.#setups.delete(sessionId);
        const why = err instanceof Error ? err.message : String(err);
        this.#options.logger.warn(
          { session_id: sessionId },
          `a pilot's WebRTC offer could not be answered: ${why}`,
        );
        this.#options.send({ type: 'rtc-failed', session_id: sessionId, message: why.slice(0, 500) });
      },
    );
  }

  /** svc-cloud's `rtc-candidate` from the session's pilot. */
  candidate(message: RtcCandidateMessage): void {
    const setup = this.#setups.get(message.session_id);
    if (setup === undefined) return;
    if (setup.answer !== undefined) setup.answer.addRemoteCandidate(message.candidate, message.mid);
    else if (setup.early.length < MAX_EARLY_CANDIDATES) setup.early.push([message.candidate, message.mid]);
  }

  /** Abandons every setup under way (the daemon stops). */
  close(): void {
    this.#closed = true;
    for (const setup of this.#setups.values()) setup.answer?.close();
    this.#setups.clear();
  }
}
