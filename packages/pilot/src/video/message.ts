/** The attribute that marks the overlay; tests and styles find it by `[data-svc-video-message]`. */
export const VIDEO_MESSAGE_ATTRIBUTE = 'data-svc-video-message';

/**
 * Shows `text` over the video area of `container` (replacing any earlier message): an element
 * absolutely positioned over the whole container, light text on a dark panel, `role="status"` so
 * screen readers announce it. Used when a channel cannot be decoded, so the user reads why
 * instead of staring at an empty picture.
 *
 * A `static` container is made `relative` so the overlay can cover it.
 *
 * @returns The overlay element.
 */
export function showVideoMessage(container: HTMLElement, text: string): HTMLElement {
  return showMarked(
    container,
    VIDEO_MESSAGE_ATTRIBUTE,
    text,
    'inset: 0; display: flex; align-items: center; justify-content: center; box-sizing: border-box; padding: 1em; margin: 0; overflow: auto; background: rgba(24, 26, 32, 0.92); font: 500 16px/1.4 system-ui, sans-serif; text-align: center; overflow-wrap: anywhere',
  );
}

/** Removes the message {@link showVideoMessage} put on `container`, if any. */
export function clearVideoMessage(container: HTMLElement): void {
  findMarked(container, VIDEO_MESSAGE_ATTRIBUTE)?.remove();
}

/** The attribute that marks the badge; tests and styles find it by `[data-svc-video-badge]`. */
export const VIDEO_BADGE_ATTRIBUTE = 'data-svc-video-badge';

/**
 * Shows `text` as a small badge in the top-left corner of the video area of `container`
 * (replacing any earlier badge), leaving the picture visible: for a picture that is shown but is
 * not live. `role="status"` so screen readers announce it.
 *
 * @returns The badge element.
 */
export function showVideoBadge(container: HTMLElement, text: string): HTMLElement {
  return showMarked(
    container,
    VIDEO_BADGE_ATTRIBUTE,
    text,
    'top: 0.5em; left: 0.5em; padding: 0.2em 0.6em; border-radius: 0.3em; background: rgba(170, 30, 30, 0.85); font: 600 13px/1.3 system-ui, sans-serif; max-width: calc(100% - 1em)',
  );
}

/** Removes the badge {@link showVideoBadge} put on `container`, if any. */
export function clearVideoBadge(container: HTMLElement): void {
  findMarked(container, VIDEO_BADGE_ATTRIBUTE)?.remove();
}

function findMarked(container: HTMLElement, attribute: string): HTMLElement | null {
  for (const child of container.children) {
    if (child instanceof HTMLElement && child.hasAttribute(attribute)) return child;
  }
  return null;
}

/**
 * Shows `text` in the element marked with `attribute` over `container`, made the first time:
 * white text, absolutely placed above the picture, with the declarations `css` for the rest (`role="status"`,
 * announced politely). A `static` container is made `relative` so the element can be placed over
 * it.
 */
function showMarked(container: HTMLElement, attribute: string, text: string, css: string): HTMLElement {
  let element = findMarked(container, attribute);
  if (element === null) {
    element = container.ownerDocument.createElement('div');
    element.setAttribute(attribute, '');
    element.setAttribute('role', 'status');
    element.setAttribute('aria-live', 'polite');
    element.style.cssText = `position: absolute; z-index: 1; color: #ffffff; ${css}`;
    const view = container.ownerDocument.defaultView;
    if (view !== null && view.getComputedStyle(container).position === 'static') {
      container.style.position = 'relative';
    }
    container.append(element);
  }
  element.textContent = text;
  return element;
}
