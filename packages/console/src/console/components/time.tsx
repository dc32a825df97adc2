/** Times as a person reads them: "3 min ago", "in 23 h", with the exact time on hover. */
import { Tooltip } from '@mantine/core';
import type { ReactNode } from 'react';

const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto', style: 'short' });

/** `at` relative to `now`, e.g. "5 min ago" or "in 2 days". */
export function relativeTime(at: Date, now = Date.now()): string {
  const seconds = Math.round((at.getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return RELATIVE.format(seconds, 'second');
  if (abs < 45 * 60) return RELATIVE.format(Math.round(seconds / 60), 'minute');
  if (abs < 22 * 3600) return RELATIVE.format(Math.round(seconds / 3600), 'hour');
  return RELATIVE.format(Math.round(seconds / 86_400), 'day');
}

/** A time, relative, with the exact local time in a tooltip; "never" for `null`. */
export function Time(props: { readonly at: string | null | undefined; readonly never?: string }): ReactNode {
  if (props.at === null || props.at === undefined) return <>{props.never ?? 'never'}</>;
  const at = new Date(props.at);
  return (
    <Tooltip label={at.toLocaleString()}>
      <time dateTime={props.at}>{relativeTime(at)}</time>
    </Tooltip>
  );
}
