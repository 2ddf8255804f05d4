// The features a license carries, as the API takes them: a JSON object, e.g. { "tier": "pro" }.
// Used by the forms that create licenses (a license, a redemption batch).
import type { Body } from './api.js';
import { h } from './dom.js';

export type Features = NonNullable<Body<'/v1/licenses', 'post'>['features']>;

/** A textarea `#<id>` for the features, and `parse(errorEl)`: the object, or null with the reason shown in errorEl. */
export function featuresInput(id: string, current: Record<string, unknown> = {}) {
  const input = h('textarea', { id, rows: 2, spellcheck: 'false', placeholder: '{ "tier": "pro" }' }, Object.keys(current).length ? JSON.stringify(current) : '');
  return {
    element: h('div', null, h('label', { for: id }, 'Features (JSON object, optional)'), input),
    parse(errorEl: HTMLElement): Features | null {
      const text = input.value.trim();
      if (!text) return {};
      try {
        const value: unknown = JSON.parse(text);
        if (value && typeof value === 'object' && !Array.isArray(value)) return value as Features;
      } catch {
        // Shown below, like any other refusal.
      }
      errorEl.textContent = 'Features must be a JSON object, e.g. { "tier": "pro" }.';
      input.focus();
      return null;
    },
  };
}
