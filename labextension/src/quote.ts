/**
 * Quote: the comparison the CLI, Slack and the notebook show (`quote?view=compare`), one row per provider ×
 * instance with its pricing models side by side, the cheapest marked, unverified or stale rows under the table and
 * every note a footnote whose text is the marker's tooltip. Filters are the grammar's own words
 * (`pricing=`, `provider=`, `region=`, `currency=`), so what the sidebar asks is what a notebook cell can ask.
 */
import { Widget } from '@lumino/widgets';

import { Status, button, element, folded, money, note, select } from './dom';
import { requestAPI } from './request';

export interface ComparisonRow {
  rank: number | null;
  key: string;
  provider: string;
  instance_type: string;
  instances: number;
  where: string;
  totals: Record<string, number | null>;
  best: string;
  verified: boolean;
  notes: string[];
  markers: string[];
  /** The words after `launch` that ask for this row's option for the quote's duration (the route's
   * `launch_option`, as Slack's card offers it); null where the team does not launch on its cloud. */
  launch?: string | null;
}

/** The quote route's comparison (gpu_assist/render/json.py `comparison_answer`). */
export interface Comparison {
  request: string;
  currency: string;
  title: string;
  columns: string[];
  rows: ComparisonRow[];
  untrusted: ComparisonRow[];
  more: number;
  footnotes: Record<string, string>;
  legend: string[];
  notices: string[];
  empty_reason: string | null;
}

const SHORT: Record<string, string> = {
  'on-demand': 'on-demand',
  spot: 'spot',
  'reserved-1y': 'res. 1y',
  'reserved-3y': 'res. 3y',
  monthly: 'monthly'
};

/** A provider as the server's registry lists it (`providers` route, gpu_assist/catalog/providers.py). */
export interface Provider {
  name: string;
  display: string;
}

/** The words of a quote: the request, then each filter that is set, as the grammar reads them. */
export function quoteWords(request: string, filters: Record<string, string>): string {
  const words = [request.trim()];
  for (const [name, value] of Object.entries(filters)) {
    if (value.trim()) {
      words.push(`${name}=${value.trim()}`);
    }
  }
  return words.join(' ');
}

/** The notebook cell that asks the same: `gpu_assist.quote(...)` returns these options as a DataFrame, one a row. */
export function notebookCall(words: string): string {
  return `import gpu_assist\n\ngpu_assist.quote(${JSON.stringify(words)})`;
}

export class QuoteTab extends Widget {
  private input = element('input', {
    type: 'text',
    value: '8xA100 72h',
    'aria-label': 'GPUs and duration to quote',
    class: 'jp-mod-styled',
    name: 'request'
  });
  private pricing = select(
    'Pricing model',
    [['', 'any pricing'], ['on-demand', 'on-demand'], ['spot', 'spot'], ['reserved', 'reserved'],
      ['reserved-1y', 'reserved 1y'], ['reserved-3y', 'reserved 3y']],
    'pricing'
  );
  private provider = select('Provider', [['', 'any provider']], 'provider');
  private region = element('input', {
    type: 'text',
    placeholder: 'region: any',
    'aria-label': 'Region or group (us, eu, asia, cn, or us-east-1)',
    title: 'A region (us-east-1) or a group: us, eu, asia, cn',
    class: 'jp-mod-styled',
    list: 'gpu-assist-regions',
    name: 'region'
  });
  private currency = select('Currency', [['', 'USD'], ['CNY', 'CNY']], 'currency');
  private status = new Status();
  private results = element('div', { class: 'gpu-assist-results' });
  private last = '';

  constructor(private openCell: (code: string) => Promise<void>) {
    super();
    this.addClass('gpu-assist-tab');
    this.id = 'gpu-assist-quote';
    this.title.label = 'Quote';
    const form = element('form', { class: 'gpu-assist-form', 'aria-label': 'Quote' });
    const submit = element('button', { type: 'submit', class: 'jp-mod-styled jp-mod-accept' }, 'Quote');
    const regions = element('datalist', { id: 'gpu-assist-regions' });
    for (const group of ['us', 'eu', 'asia', 'cn', 'us-east-1', 'us-west-2', 'eu-west-1']) {
      regions.append(element('option', { value: group }));
    }
    form.append(
      element('div', { class: 'gpu-assist-row' }, this.input, submit),
      element('div', { class: 'gpu-assist-filters' }, this.pricing, this.provider, this.region, this.currency, regions)
    );
    form.addEventListener('submit', event => {
      event.preventDefault();
      void this.quote();
    });
    for (const control of [this.pricing, this.provider, this.region, this.currency]) {
      control.addEventListener('change', () => void this.quote());
    }
    const cell = button('Open as notebook cell', () => void this.openCell(notebookCall(this.words())), {
      'aria-label': 'Open this quote as a notebook cell',
      title: 'Insert the gpu_assist.quote(...) call that gives these options as a DataFrame'
    });
    void this.listProviders();
    this.node.append(
      form,
      note('e.g. 8xA100 72h · 4xH100 2d · A100:8 3d region=us-east-1'),
      element('div', { class: 'gpu-assist-actions' }, cell),
      this.status.node,
      this.results
    );
  }

  /**
   * The Provider filter's choices, from the server's registry: the one list of providers, never a copy here. Until
   * it answers (or if it cannot), the filter offers "any provider" alone, and a `provider=` typed in still works.
   */
  private async listProviders(): Promise<void> {
    try {
      const answer = await requestAPI<{ providers: Provider[] }>('providers');
      for (const { name, display } of answer.providers) {
        this.provider.append(element('option', { value: name, title: display }, name));
      }
    } catch (error) {
      this.provider.title = 'Provider (the list could not be loaded: ' + String(error) + ')';
    }
  }

  words(): string {
    return quoteWords(this.input.value, {
      pricing: this.pricing.value,
      provider: this.provider.value,
      region: this.region.value,
      currency: this.currency.value
    });
  }

  async quote(): Promise<void> {
    const words = this.words();
    this.last = words;
    this.status.busy('Pricing ' + words + '…');
    try {
      const answer = await requestAPI<Comparison>('quote', { q: words, view: 'compare' });
      if (words === this.last) {
        this.status.clear();
        this.draw(answer);
      }
    } catch (error) {
      this.results.textContent = '';
      this.status.error(error);
    }
  }

  /** Ask for a row's launch as the Jupyter user: a pending request an approver decides (Slack or the Requests tab). */
  private async requestLaunch(words: string, control: HTMLButtonElement): Promise<void> {
    control.disabled = true;
    this.status.busy(`Asking to launch ${words}…`);
    try {
      const record = await requestAPI<{ id: string; state: string }>('launch', {}, { q: words });
      this.status.busy(`Launch of ${words} asked: ${record.id} is ${record.state} (Requests tab)`);
    } catch (error) {
      control.disabled = false;
      this.status.error(error);
    }
  }

  protected onAfterAttach(): void {
    if (!this.last) {
      void this.quote();
    }
  }

  private draw(answer: Comparison): void {
    this.results.textContent = '';
    this.results.append(element('div', { class: 'gpu-assist-title' }, answer.title));
    if (answer.rows.length === 0 && answer.untrusted.length === 0) {
      this.results.append(note(`No option matches: ${answer.empty_reason ?? 'try fewer filters'}`));
      return;
    }
    const ask = (words: string, control: HTMLButtonElement): void => void this.requestLaunch(words, control);
    if (answer.rows.length) {
      this.results.append(table(answer, answer.rows, 'Comparison, cheapest first', ask));
    }
    if (answer.more) {
      this.results.append(note(`${answer.more} more: top=all in a notebook cell shows them all`));
    }
    if (answer.untrusted.length) {
      this.results.append(
        element('h4', { class: 'gpu-assist-subheading' }, 'Unverified or stale — not ranked'),
        table(answer, answer.untrusted, 'Unverified or stale prices', ask)
      );
    }
    for (const notice of answer.notices) {
      this.results.append(note(notice, { class: 'gpu-assist-note gpu-assist-notice' }));
    }
    const legend = element('ul', { class: 'gpu-assist-legend' });
    for (const line of answer.legend) {
      legend.append(element('li', {}, line));
    }
    this.results.append(folded('Legend and footnotes', legend));
  }
}

type AskLaunch = (words: string, control: HTMLButtonElement) => void;

function table(answer: Comparison, rows: ComparisonRow[], label: string, ask: AskLaunch): HTMLElement {
  const wrap = element('div', { class: 'gpu-assist-scroll' });
  const node = element('table', { class: 'gpu-assist-table gpu-assist-compare', 'aria-label': label });
  const head = element('tr', {},
    element('th', { scope: 'col', class: 'num' }, '#'),
    element('th', { scope: 'col' }, 'provider · instance'),
    element('th', { scope: 'col', class: 'num gpu-assist-narrow' }, 'best'));
  for (const column of answer.columns) {
    head.append(element('th', { scope: 'col', class: 'num gpu-assist-wide' }, SHORT[column] ?? column));
  }
  head.append(element('th', { scope: 'col', class: 'gpu-assist-wide' }, 'where'));
  node.append(element('thead', {}, head));
  const body = element('tbody');
  for (const row of rows) {
    body.append(rowOf(answer, row, ask));
  }
  node.append(body);
  wrap.append(node);
  return wrap;
}

function rowOf(answer: Comparison, row: ComparisonRow, ask: AskLaunch): HTMLTableRowElement {
  const cheapest = row.rank === 1;
  const node = element('tr', {
    class: 'gpu-assist-option' + (cheapest ? ' gpu-assist-cheapest' : '') + (row.verified ? '' : ' gpu-assist-unverified'),
    'data-key': row.key,
    'data-provider': row.provider,
    'data-instance-type': row.instance_type,
    'data-instances': String(row.instances),
    'data-where': row.where,
    'data-best': row.best
  });
  node.append(element('td', { class: 'num gpu-assist-rank' }, row.rank === null ? '–' : String(row.rank)));
  const offer = element('td', { class: 'gpu-assist-offer' },
    element('div', { class: 'gpu-assist-provider' }, row.provider),
    element('span', { class: 'gpu-assist-instance', title: row.instance_type },
      (row.instances > 1 ? `${row.instances}× ` : '') + row.instance_type));
  for (const marker of row.markers) {
    const text = answer.footnotes[marker] ?? '';
    offer.append(element('sup', { class: 'gpu-assist-marker', title: text, 'aria-label': `note ${marker}: ${text}`,
      tabindex: '0' }, marker));
  }
  if (cheapest) {
    offer.append(' ', element('span', { class: 'gpu-assist-badge', title: 'the cheapest verified option' },
      'cheapest'));
  }
  offer.append(element('div', { class: 'gpu-assist-note gpu-assist-narrow-block' }, row.where));
  const launch = row.launch;
  if (launch) {
    const control: HTMLButtonElement = button('Request launch', () => ask(launch, control), {
      class: 'jp-mod-styled gpu-assist-button gpu-assist-launch',
      'aria-label': `Request launch of ${row.provider} ${row.instance_type}`,
      title: `Ask an approver to launch ${launch}`
    });
    offer.append(element('div', { class: 'gpu-assist-actions' }, control));
  }
  node.append(offer);
  const best = row.totals[row.best];
  node.append(element('td', { class: 'num gpu-assist-narrow gpu-assist-total' },
    element('div', {}, money(best, answer.currency)),
    element('div', { class: 'gpu-assist-note' }, SHORT[row.best] ?? row.best)));
  for (const column of answer.columns) {
    const total = row.totals[column];
    const isBest = column === row.best;
    node.append(element('td', {
      class: 'num gpu-assist-wide' + (isBest ? ' gpu-assist-best' : ''),
      'data-model': column,
      'data-total': total === null ? '' : String(total),
      ...(isBest ? { title: 'the cheapest way to buy this row' } : {})
    }, total === null ? '—' : money(total, answer.currency) + (isBest ? ' *' : '')));
  }
  node.append(element('td', { class: 'gpu-assist-wide gpu-assist-where' }, row.where));
  if (row.notes.length) {
    node.title = row.notes.join('\n');
  }
  return node;
}
