// DOM helpers of the portal. Every piece of data reaches the page as a text node or an attribute
// value (textContent, setAttribute): no HTML string is ever parsed, and the page's Trusted Types
// policy makes innerHTML throw anyway.

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Attributes: `on…` listeners, the live properties (value, checked, disabled, selected), else attribute values; null, undefined and false leave one out. */
export type Attrs = Record<string, unknown> | null | undefined;
/** What an element holds: nodes, text, numbers, and lists of them; null, undefined and false are skipped. */
export type Child = Node | string | number | null | undefined | false | Child[];
const PROPERTIES = new Set(['value', 'checked', 'disabled', 'selected']);

function setAttributes(el: Element, attrs: Attrs): void {
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value as EventListener);
    else if (PROPERTIES.has(name)) (el as unknown as Record<string, unknown>)[name] = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
}

function appendChildren(el: Element, children: Child[]): void {
  for (const child of children.flat(Infinity as 1) as Child[]) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

/** `h('p', { class: 'hint' }, 'text', otherNode)`: an element; strings become text nodes. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttributes(el, attrs);
  appendChildren(el, children);
  return el;
}

/**
 * A table of data. On a phone it scrolls sideways inside its card (portal.css), so it takes the
 * focus, for the keyboard to scroll it too.
 */
export function dataTable(attrs: Attrs, ...children: Child[]): HTMLTableElement {
  return h('table', { tabindex: 0, ...attrs }, ...children);
}

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs?: Attrs, ...children: Child[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs ?? {})) if (value !== undefined && value !== null) el.setAttribute(name, String(value));
  appendChildren(el, children);
  return el;
}

/** Replaces an element's content. */
export function mount<E extends Element>(el: E, ...children: Child[]): E {
  el.replaceChildren();
  appendChildren(el, children);
  return el;
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KB', 'MB', 'GB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

export function badge(text: string): HTMLSpanElement {
  return h('span', { class: `badge ${text}` }, text);
}

/** A definition list of [label, value] pairs. */
export function facts(pairs: ([string, Child] | null | undefined | false)[]): HTMLDListElement {
  return h(
    'dl',
    { class: 'facts' },
    pairs.flatMap((pair) => (pair ? [pair] : [])).flatMap(([label, value]) => [h('dt', null, label), h('dd', null, value ?? '—')]),
  );
}

/**
 * A button that asks again in place ("Really …? Yes / No") before it acts. From the keyboard the
 * question takes the focus (on No, the safe answer), and answering gives it back to the button.
 */
export function confirmButton(label: string, question: string, onConfirm: () => unknown, { danger = true, id }: { danger?: boolean; id?: string } = {}): HTMLSpanElement {
  const wrap = h('span', { class: 'confirm' });
  const first = h('button', { type: 'button', class: danger ? 'danger' : 'secondary', id, onclick: () => ask() }, label);
  const back = () => {
    const hadFocus = wrap.contains(document.activeElement);
    mount(wrap, first);
    if (hadFocus || document.activeElement === document.body) first.focus();
  };
  const ask = () => {
    const yes = h(
      'button',
      {
        type: 'button',
        class: danger ? 'danger' : '',
        'data-confirm': 'yes',
        onclick: () => {
          yes.disabled = true;
          Promise.resolve(onConfirm()).finally(back);
        },
      },
      'Yes',
    );
    const no = h('button', { type: 'button', class: 'secondary', 'data-confirm': 'no', onclick: back }, 'No');
    mount(wrap, h('span', { role: 'status' }, `${question} `), yes, ' ', no);
    no.focus();
  };
  wrap.append(first);
  return wrap;
}

/** Copies text to the clipboard and says so in `status`. */
export function copyButton(getText: () => string, label = 'Copy'): HTMLSpanElement {
  const status = h('span', { class: 'hint', role: 'status' });
  const button = h(
    'button',
    {
      type: 'button',
      class: 'secondary',
      onclick: () => {
        navigator.clipboard.writeText(getText()).then(
          () => {
            status.textContent = ' Copied.';
          },
          () => {
            status.textContent = ' Select the text and copy it.';
          },
        );
      },
    },
    label,
  );
  return h('span', null, button, status);
}
