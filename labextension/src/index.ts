/**
 * GPU Assistant: a left-sidebar panel with a quote form and a live utilization view,
 * over the gpu-assist server extension (see src/request.ts). Opened from the sidebar or the
 * command palette ("GPU Assistant: Open").
 */
import { ILabShell, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { requestAPI } from './request';

interface QuoteOption {
  provider: string;
  region: string;
  zone: string;
  instance_type: string;
  instances: number;
  gpu: string;
  gpu_count: number;
  pricing_model: string;
  total: number;
  per_gpu_hour: number;
  currency: string;
  verified: boolean;
  notes: string[];
}

/** The quote route's answer (gpu_assist/render/json.py `quote`). */
interface QuoteResult {
  request: string;
  currency: string;
  options: QuoteOption[];
  notices: string[];
  empty_reason: string | null;
}

interface GpuSample {
  index: number;
  name: string | null;
  utilization_gpu_pct: number | null;
  memory_used_mib: number | null;
  memory_total_mib: number | null;
}

interface Snapshot {
  gpus: GpuSample[];
  reason: string | null;
}

const COMMAND = 'gpu-assist:open';
const POLL_MS = 2000;

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  text = ''
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    node.setAttribute(key, value);
  }
  node.textContent = text;
  return node;
}

function money(amount: number, currency: string): string {
  const symbol = currency === 'CNY' ? '¥' : currency === 'USD' ? '$' : currency + ' ';
  return symbol + amount.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
}

export class AssistantPanel extends Widget {
  private input = element('input', { type: 'text', value: '8xA100 72h', 'aria-label': 'GPU request' });
  private error = element('div', { class: 'gpu-assist-error', role: 'alert' });
  private results = element('div', { class: 'gpu-assist-results' });
  private util = element('div', { class: 'gpu-assist-util' });
  private timer: number | undefined;

  constructor() {
    super();
    this.id = 'gpu-assist-panel';
    this.title.caption = 'GPU Assistant';
    this.title.label = 'GPU';
    this.addClass('gpu-assist-panel');
    const form = element('form', { class: 'gpu-assist-form' });
    const button = element('button', { type: 'submit', class: 'jp-mod-styled jp-mod-accept' }, 'Quote');
    form.append(this.input, button);
    form.addEventListener('submit', event => {
      event.preventDefault();
      void this.quote();
    });
    this.node.append(
      element('h2', {}, 'Quote'),
      form,
      element('div', { class: 'gpu-assist-note' }, 'e.g. 8xA100 72h · 4xH100 2d spot · A100:8 3d region=us-east-1'),
      this.error,
      this.results,
      element('h2', {}, 'GPUs on this server'),
      this.util
    );
  }

  async quote(): Promise<void> {
    this.error.textContent = '';
    this.results.textContent = 'Pricing…';
    try {
      const result = await requestAPI<QuoteResult>('quote', this.input.value + ' top=10');
      this.showQuote(result);
    } catch (error) {
      this.results.textContent = '';
      this.error.textContent = (error as Error).message;
    }
  }

  private showQuote(result: QuoteResult): void {
    const options = result.options;
    this.results.textContent = '';
    if (options.length === 0) {
      this.results.textContent = `No option matches: ${result.empty_reason ?? 'try fewer filters'}`;
      return;
    }
    // Three columns fit the sidebar's default width; the notes are the row's tooltip.
    const table = element('table', { class: 'gpu-assist-table' });
    const head = element('tr');
    for (const title of ['#', 'offer', 'total']) {
      head.append(element('th', {}, title));
    }
    table.append(head);
    options.forEach((option, index) => {
      const row = element('tr', { class: 'gpu-assist-option' });
      row.append(element('td', { class: 'num' }, String(index + 1)));
      const offer = element('td', { class: 'gpu-assist-offer' });
      const heading = element('div');
      heading.append(
        element('span', { class: 'gpu-assist-provider' }, option.provider),
        ' · ',
        element('span', { class: 'gpu-assist-pricing' }, option.pricing_model)
      );
      const where = (option.zone || option.region) + (option.verified ? '' : ' · unverified price');
      offer.append(
        heading,
        element('div', { class: 'gpu-assist-instance' }, `${option.instances}× ${option.instance_type}`),
        element('div', { class: 'gpu-assist-note' }, where)
      );
      row.append(offer);
      const total = element('td', { class: 'num' });
      total.append(
        element('div', { class: 'gpu-assist-total' }, money(option.total, option.currency)),
        element('div', { class: 'gpu-assist-note' }, money(option.per_gpu_hour, option.currency) + '/GPU-h')
      );
      row.append(total);
      row.title = option.notes.join('\n');
      table.append(row);
    });
    this.results.append(table);
  }

  private async poll(): Promise<void> {
    try {
      const snapshot = await requestAPI<Snapshot>('util');
      this.showUtil(snapshot);
    } catch (error) {
      this.util.textContent = (error as Error).message;
    }
  }

  private showUtil(snapshot: Snapshot): void {
    this.util.textContent = '';
    if (snapshot.gpus.length === 0) {
      this.util.append(element('div', { class: 'gpu-assist-note' }, 'No GPUs: ' + (snapshot.reason || 'none found')));
      return;
    }
    for (const gpu of snapshot.gpus) {
      const used = gpu.utilization_gpu_pct ?? 0;
      const line = element(
        'div',
        {},
        `GPU ${gpu.index} ${gpu.name ?? ''}: ${gpu.utilization_gpu_pct ?? 'n/a'}% · ` +
          `${((gpu.memory_used_mib ?? 0) / 1024).toFixed(1)}/${((gpu.memory_total_mib ?? 0) / 1024).toFixed(0)} GiB`
      );
      const bar = element('div', { class: 'gpu-assist-bar' });
      const fill = element('div');
      fill.style.width = `${Math.max(0, Math.min(100, used))}%`;
      bar.append(fill);
      this.util.append(line, bar);
    }
  }

  protected onAfterShow(): void {
    void this.poll();
    this.timer = window.setInterval(() => void this.poll(), POLL_MS);
  }

  protected onAfterHide(): void {
    window.clearInterval(this.timer);
  }

  dispose(): void {
    window.clearInterval(this.timer);
    super.dispose();
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'gpu-assist:sidebar',
  description: 'GPU Assistant sidebar: quotes and live GPU utilization',
  autoStart: true,
  requires: [ILabShell],
  optional: [ICommandPalette],
  activate: (app: JupyterFrontEnd, shell: ILabShell, palette: ICommandPalette | null) => {
    const panel = new AssistantPanel();
    shell.add(panel, 'left', { rank: 900 });
    app.commands.addCommand(COMMAND, {
      label: 'GPU Assistant: Open',
      execute: () => shell.activateById(panel.id)
    });
    palette?.addItem({ command: COMMAND, category: 'GPU Assistant' });
  }
};

export default plugin;
