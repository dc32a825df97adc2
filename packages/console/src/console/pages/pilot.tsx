/**
 * The pilot inside the console: the pilot SDK's `<svc-pilot>` cockpit (video, HUD, sensors,
 * keyboard and gamepad driving), with a pilot session token minted for the signed-in person
 * before each attempt. Every refusal (no access, robot offline, slot taken, token refused) is shown
 * by the cockpit as a message. This module, and with it WebCodecs, WebTransport and the FEC
 * kernel, loads only when a robot is opened.
 */
import { Anchor, Group, Stack, Text, Title } from '@mantine/core';
import { fetchSessionToken } from '@svc/pilot';
import { SVC_PILOT_TAG, type SvcPilotElement } from '@svc/pilot/elements';
import { type ReactNode, useEffect, useRef } from 'react';
import { Link } from 'wouter';
import { currentAccessToken } from '../api/client.js';
import type { MyOrg } from '../auth.js';
import { useHashQuery } from '../hash-location.js';

/** The cockpit page of one robot of `org`. */
export function PilotPage(props: { readonly org: MyOrg; readonly robotId: string }): ReactNode {
  const { org, robotId } = props;
  const scope = useHashQuery().get('scope') === 'observe' ? 'observe' : 'drive';
  const container = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const pilot = document.createElement(SVC_PILOT_TAG) as SvcPilotElement;
    pilot.setAttribute('robot', robotId);
    pilot.setAttribute('scope', scope);
    // A 4xx answer (no access, no such robot, signed out) becomes the refusal the cockpit shows.
    pilot.token = () => {
      const accessToken = currentAccessToken();
      return fetchSessionToken({ robotId, scope, ...(accessToken !== undefined && { accessToken }) });
    };
    container.current?.append(pilot);
    return () => pilot.remove();
  }, [robotId, scope]);

  return (
    <Stack gap="xs">
      <Group justify="space-between">
        <Title order={2}>
          {scope === 'drive' ? 'Pilot' : 'Watch'}: {robotId}
        </Title>
        <Anchor component={Link} href={`/orgs/${org.id}/robots/${encodeURIComponent(robotId)}`}>
          Leave
        </Anchor>
      </Group>
      {scope === 'drive' && (
        <Text size="sm" c="dimmed">
          Drive with the arrow keys, WASD or a gamepad; the Stop button stops the robot.
        </Text>
      )}
      <div ref={container} style={{ background: '#10131a', borderRadius: 8 }} />
    </Stack>
  );
}
