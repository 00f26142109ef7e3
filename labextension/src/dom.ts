/** Small DOM helpers shared by the tabs: no framework, JupyterLab's own classes and theme variables. */

export function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

export function button(label: string, onClick: () => void, attributes: Record<string, string> = {}): HTMLButtonElement {
  const node = element('button', { type: 'button', class: 'jp-mod-styled gpu-assist-button', ...attributes }, label);
  node.addEventListener('click', onClick);
  return node;
}

/** A labelled `<select>`; `options` are [value, label] pairs. */
export function select(label: string, options: [string, string][], name: string): HTMLSelectElement {
  const node = element('select', { class: 'jp-mod-styled', 'aria-label': label, name, title: label });
  for (const [value, text] of options) {
    node.append(element('option', { value }, text));
  }
  return node;
}

const SYMBOLS: Record<string, string> = { USD: '$', CNY: '¥', EUR: '€', GBP: '£', JPY: '¥' };

export function money(amount: number | null | undefined, currency: string, places = 2): string {
  if (amount === null || amount === undefined) {
    return '—';
  }
  const symbol = SYMBOLS[currency] ?? currency + ' ';
  const text = Math.abs(amount).toLocaleString('en-US', {
    minimumFractionDigits: places,
    maximumFractionDigits: places
  });
  return (amount < 0 ? '−' : '') + symbol + text;
}

/** A status line: where an error or "loading" goes, read out by screen readers as it changes. */
export class Status {
  readonly node = element('div', { class: 'gpu-assist-status', role: 'status', 'aria-live': 'polite' });

  busy(text: string): void {
    this.node.className = 'gpu-assist-status gpu-assist-note';
    this.node.textContent = text;
  }

  clear(): void {
    this.node.className = 'gpu-assist-status';
    this.node.textContent = '';
  }

  error(error: unknown): void {
    const found = error as { message?: string; hint?: string; example?: string };
    this.node.className = 'gpu-assist-status gpu-assist-error';
    this.node.textContent = '';
    this.node.setAttribute('role', 'alert');
    this.node.append(element('div', {}, found.message ?? String(error)));
    if (found.hint) {
      this.node.append(element('div', { class: 'gpu-assist-note' }, found.hint));
    }
  }
}

/** A section title inside a tab. */
export function heading(text: string): HTMLHeadingElement {
  return element('h3', { class: 'gpu-assist-heading' }, text);
}

export function note(text: string, attributes: Record<string, string> = {}): HTMLDivElement {
  return element('div', { class: 'gpu-assist-note', ...attributes }, text);
}

/** A folded block (`<details>`): its summary is keyboard-reachable as it is. */
export function folded(summary: string, ...children: (Node | string)[]): HTMLDetailsElement {
  return element('details', { class: 'gpu-assist-details' }, element('summary', {}, summary), ...children);
}

const SVG = 'http://www.w3.org/2000/svg';

export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number> = {}
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) {
    node.setAttribute(key, String(value));
  }
  return node;
}
