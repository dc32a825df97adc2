import type { z } from 'zod';
import { can } from '../authz.js';
import { type ApiPlugin, ORG_ERRORS, requireUserCaller, roleIn } from '../context.js';
import { ApiError, errorResponses } from '../errors.js';
import { FLEET_STREAM_DESCRIPTION, fleetEvent } from '../fleet-events.js';
import type { FleetSink } from '../fleet-feed.js';
import { orgParams } from '../schemas.js';

/** Headers of the event stream: never cached, never buffered by a proxy. */
const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-store',
  'x-accel-buffering': 'no',
} as const;

/**
 * The fleet's live view, under `/api/v1/orgs/:org/fleet`: `GET /events` streams the org's robots
 * and their changes as server-sent events (the feed in `fleet-feed.ts` makes them).
 */
export const fleetRoutes: ApiPlugin = async (app, { ctx }) => {
  // Registered on Fastify's own route: the success is a stream, not a JSON body, so it is declared
  // by content type; the errors are the API's as every route declares them.
  app.route({
    method: 'GET',
    url: '/events',
    schema: {
      tags: ['fleet'],
      summary: "Live fleet: the org's robots, then their changes, as server-sent events",
      description: FLEET_STREAM_DESCRIPTION,
      params: orgParams,
      response: {
        200: {
          description: 'The event stream: a `snapshot` event, then changes until `end` or the client leaves',
          content: { 'text/event-stream': { schema: fleetEvent } },
        },
        ...errorResponses([...ORG_ERRORS]),
      },
    },
    async handler(request, reply) {
      const orgId = (request.params as z.output<typeof orgParams>).org;
      const caller = await requireUserCaller(ctx, request);
      const role = await roleIn(ctx.db, orgId, caller.user.id);
      if (!can(role, 'org.read')) {
        throw new ApiError('forbidden', `your role in this organisation (${role}) does not allow org.read`);
      }
      const exp = caller.claims.exp;
      const raw = reply.raw;
      let opened = false;
      // The answer starts with the first text the feed writes (the snapshot): until then an error
      // is answered as any other.
      const open = () => {
        if (opened) return;
        opened = true;
        reply.hijack();
        raw.writeHead(200, STREAM_HEADERS);
      };
      // Nothing is written to a response whose client has gone (its `close` removes the stream).
      const gone = () => raw.destroyed || raw.writableEnded;
      const sink: FleetSink = {
        write(text) {
          open();
          if (!gone()) raw.write(text);
        },
        end(text) {
          open();
          if (!gone()) raw.end(text);
        },
        get bufferedBytes() {
          return raw.writableLength;
        },
      };
      const subscription = await ctx.fleet.subscribe(
        { orgId, userId: caller.user.id, expiresAtMs: typeof exp === 'number' ? exp * 1000 : undefined },
        sink,
      );
      if (raw.destroyed) subscription.close();
      else raw.on('close', () => subscription.close());
    },
  });
};
