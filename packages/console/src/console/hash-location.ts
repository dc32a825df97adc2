/**
 * The console routes inside the URL fragment (`/console/#/orgs/…/fleet`), so svc-cloud serves one
 * `index.html` for every page and a link such as the invitation's (`#/invite?email=…`) reaches
 * the app unchanged. Wouter's own hash hook counts a fragment's `?…` as part of the path; this one
 * keeps the path and the fragment's query apart.
 */
import { useSyncExternalStore } from 'react';

function subscribe(callback: () => void): () => void {
  addEventListener('hashchange', callback);
  return () => removeEventListener('hashchange', callback);
}

/** The fragment's path: `#/orgs/x/fleet?y=1` → `/orgs/x/fleet`. */
export function hashPath(hash: string): string {
  const path = hash.replace(/^#?\/?/, '/').split('?')[0] ?? '/';
  return path === '' ? '/' : path;
}

/** The fragment's query: `#/invite?email=a` → `email=a`. */
export function hashQuery(hash: string): URLSearchParams {
  const at = hash.indexOf('?');
  return new URLSearchParams(at < 0 ? '' : hash.slice(at + 1));
}

/** Goes to `to` (a path, optionally with `?query`) inside the fragment. */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const hash = `#${to.startsWith('/') ? to : `/${to}`}`;
  if (options.replace === true) {
    history.replaceState(history.state, '', `${location.pathname}${location.search}${hash}`);
    dispatchEvent(new HashChangeEvent('hashchange'));
  } else {
    location.hash = hash;
  }
}

/** Wouter's location hook over the fragment's path. */
export function useHashLocation(): [string, (to: string, options?: { replace?: boolean }) => void] {
  return [useSyncExternalStore(subscribe, () => hashPath(location.hash)), navigate];
}

/** The fragment's query, updated when the fragment changes. */
export function useHashQuery(): URLSearchParams {
  const query = useSyncExternalStore(subscribe, () => {
    const at = location.hash.indexOf('?');
    return at < 0 ? '' : location.hash.slice(at + 1);
  });
  return new URLSearchParams(query);
}

/** Wouter's `hrefs`: links are written as fragments. */
useHashLocation.hrefs = (href: string): string => `#${href}`;
