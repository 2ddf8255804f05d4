/** What a route hands its page: the parts of the path its pattern captured, and the query after `?`. */
export interface PageContext {
  params: string[];
  query: URLSearchParams;
}

/** A page renders into its view (a fresh element the router mounted); one replaced meanwhile is simply detached. */
export type Page = (view: HTMLElement, context: PageContext) => Promise<void>;

/** The element of the shell with this id: the shell (shell.html) always has it. */
export function byId<E extends HTMLElement = HTMLElement>(id: string): E {
  const el = document.getElementById(id);
  if (!el) throw new Error(`The page has no #${id}`);
  return el as E;
}
