// DOM helpers of the portal. Every piece of data reaches the page as a text node or an attribute
// value (textContent, setAttribute): no HTML string is ever parsed, and the page's Trusted Types
// policy makes innerHTML throw anyway.

const SVG_NS = 'http://www.w3.org/2000/svg';

function setAttributes(el, attrs) {
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (name === 'value' || name === 'checked' || name === 'disabled' || name === 'selected') el[name] = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
}

function appendChildren(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

/** `h('p', { class: 'hint' }, 'text', otherNode)`: an element; strings become text nodes. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttributes(el, attrs);
  appendChildren(el, children);
  return el;
}

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs ?? {})) if (value !== undefined && value !== null) el.setAttribute(name, String(value));
  appendChildren(el, children);
  return el;
}

/** Replaces an element's content. */
export function mount(el, ...children) {
  el.replaceChildren();
  appendChildren(el, children);
  return el;
}

export function formatDate(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function formatBytes(n) {
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

export function badge(text) {
  return h('span', { class: `badge ${text}` }, text);
}

/** A definition list of [label, value] pairs. */
export function facts(pairs) {
  return h(
    'dl',
    { class: 'facts' },
    pairs.filter(Boolean).flatMap(([label, value]) => [h('dt', null, label), h('dd', null, value ?? '—')]),
  );
}

/** A button that asks again in place ("Really …? Yes / No") before it acts. */
export function confirmButton(label, question, onConfirm, { danger = true, id } = {}) {
  const wrap = h('span', { class: 'confirm' });
  const first = h('button', { type: 'button', class: danger ? 'danger' : 'secondary', id, onclick: () => ask() }, label);
  const ask = () => {
    const yes = h(
      'button',
      {
        type: 'button',
        class: danger ? 'danger' : '',
        'data-confirm': 'yes',
        onclick: () => {
          yes.disabled = true;
          Promise.resolve(onConfirm()).finally(() => mount(wrap, first));
        },
      },
      'Yes',
    );
    const no = h('button', { type: 'button', class: 'secondary', onclick: () => mount(wrap, first) }, 'No');
    mount(wrap, h('span', null, `${question} `), yes, ' ', no);
  };
  wrap.append(first);
  return wrap;
}

/** Copies text to the clipboard and says so in `status`. */
export function copyButton(getText, label = 'Copy') {
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
