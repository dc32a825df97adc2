import type { RequestOfferOptions, RobotOffer } from './connection/signal-session.js';
import { SignalSession } from './connection/signal-session.js';

export {
  candidateUrl,
  isOfferError,
  OfferError,
  type OfferErrorCode,
  type RequestOfferOptions,
  type RobotOffer,
} from './connection/signal-session.js';

/**
 * Asks svc-cloud for a session with a robot over signalling v2 (`docs/protocol/signalling.md`):
 * answers the challenge with the pilot session token, sends `connect`, and resolves with the
 * offer. The WebSocket is closed once the offer arrives, so this pilot hears nothing of the driver
 * slot: a `PilotConnection` keeps a {@link SignalSession} open instead, for handover.
 *
 * @throws {OfferError} (as a rejection) with the code that says why there is no offer.
 */
export async function requestOffer(options: RequestOfferOptions): Promise<RobotOffer> {
  const session = new SignalSession(options);
  try {
    return await session.offer();
  } finally {
    session.close();
  }
}
