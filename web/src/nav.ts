// Moving between the portal's pages without loading the page again: the path names the page,
// the history keeps where the user has been, and links stay links (open in a new tab, copy).
import { createElement, type ComponentChildren } from "preact";
import { useEffect } from "preact/hooks";

let listener: (to: string) => void = () => {};

/** onNavigate is told of every move; the app draws the page of the new path. */
export function onNavigate(f: (to: string) => void) {
  listener = f;
}

/** navigate moves to the page at path (with its query), adding it to the history unless
 * replace. */
export function navigate(to: string, replace = false) {
  if (to !== location.pathname + location.search) {
    if (replace) history.replaceState(null, "", to);
    else history.pushState(null, "", to);
  }
  listener(to);
  scrollTo(0, 0);
}

/** Link is an anchor that moves within the portal when clicked plainly. */
export function Link(props: { href: string; class?: string; children: ComponentChildren; "aria-current"?: "page" }) {
  const { href, children, ...rest } = props;
  return createElement(
    "a",
    {
      href,
      ...rest,
      onClick: (e: MouseEvent) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      },
    },
    children,
  );
}

/** useTitle names the page in the window's title. */
export function useTitle(title: string) {
  useEffect(() => {
    document.title = `${title} · Barrage`;
  }, [title]);
}
