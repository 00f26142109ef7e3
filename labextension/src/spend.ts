/**
 * Spend: month to date by project and by requester (`spend`), the daily costs as bars with the budget's daily
 * share as a line across them, and each budget's standing in the words the other faces use.
 */
import { Widget } from '@lumino/widgets';

import { Status, button, element, heading, money, note, svg } from './dom';
import { requestAPI } from './request';

interface Budget {
  name: string;
  amount: number;
  currency: string;
  over: boolean;
  line: string;
}

/** The spend route's answer (gpu_assist/render/json.py `spend`). */
interface SpendReport {
  period: { label: string; start: string; end: string };
  currency: string;
  total: number;
  committed: number;
  groups: Record<string, Record<string, number>>;
  daily: { day: string; cost: number }[];
  budgets: Budget[];
  notes: string[];
}

function daysInMonth(isoDate: string): number {
  const [year, month] = isoDate.slice(0, 7).split('-').map(Number);
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Daily bars, with a dashed line at the first budget's daily share (its month's amount over the month's days). */
export function dailyChart(report: SpendReport): SVGSVGElement {
  const width = 300;
  const height = 110;
  const budget = report.budgets[0];
  const share = budget ? budget.amount / daysInMonth(report.period.start) : 0;
  const top = Math.max(share, ...report.daily.map(d => d.cost), 1) * 1.1;
  const chart = svg('svg', {
    viewBox: `0 0 ${width} ${height + 14}`,
    class: 'gpu-assist-chart',
    role: 'img',
    'aria-label': `daily cost, ${report.daily.length} days` + (budget ? `, budget ${money(share, report.currency)} a day` : '')
  });
  // One slot per day of the month, so a bar's place is its date and the month to come shows as room.
  const days = daysInMonth(report.period.start);
  const slot = width / days;
  report.daily.forEach(day => {
    const index = Number(day.day.slice(8, 10)) - 1;
    const tall = (day.cost / top) * height;
    const bar = svg('rect', {
      x: index * slot + slot * 0.15, y: height - tall, width: slot * 0.7, height: Math.max(tall, 0.5),
      class: 'gpu-assist-chart-bar' + (budget && day.cost > share ? ' gpu-assist-chart-over' : '')
    });
    const tip = svg('title');
    tip.textContent = `${day.day}: ${money(day.cost, report.currency)}`;
    bar.append(tip);
    chart.append(bar);
  });
  if (budget) {
    const y = height - (share / top) * height;
    chart.append(svg('line', { x1: 0, x2: width, y1: y, y2: y, class: 'gpu-assist-chart-budget' }));
    const label = svg('text', { x: width - 2, y: Math.min(y + 11, height - 2), 'text-anchor': 'end',
      class: 'gpu-assist-chart-label' });
    label.textContent = `budget ${money(share, report.currency, 0)}/day`;
    chart.append(label);
  }
  const month = report.period.start.slice(0, 8);
  for (const [x, anchor, text] of [[0, 'start', month + '01'], [width, 'end', month + String(days)]] as
    [number, string, string][]) {
    const axis = svg('text', { x, y: height + 12, 'text-anchor': anchor, class: 'gpu-assist-chart-label' });
    axis.textContent = text.slice(5);
    chart.append(axis);
  }
  return chart;
}

function groupTable(title: string, totals: Record<string, number>, currency: string): HTMLElement {
  const table = element('table', { class: 'gpu-assist-table', 'aria-label': `spend by ${title}` });
  table.append(element('thead', {}, element('tr', {},
    element('th', { scope: 'col' }, title), element('th', { scope: 'col', class: 'num' }, 'cost'))));
  const body = element('tbody');
  const sorted = Object.entries(totals).sort((a, b) => b[1] - a[1]);
  for (const [key, cost] of sorted) {
    body.append(element('tr', {}, element('td', {}, key), element('td', { class: 'num' }, money(cost, currency))));
  }
  if (!sorted.length) {
    body.append(element('tr', {}, element('td', { colspan: '2', class: 'gpu-assist-note' }, 'nothing yet')));
  }
  table.append(body);
  return table;
}

export class SpendTab extends Widget {
  private status = new Status();
  private results = element('div', { class: 'gpu-assist-results' });

  constructor() {
    super();
    this.addClass('gpu-assist-tab');
    this.id = 'gpu-assist-spend';
    this.title.label = 'Spend';
    this.node.append(
      element('div', { class: 'gpu-assist-actions' },
        button('Refresh', () => void this.refresh(), { 'aria-label': 'Refresh the spend report' })),
      this.status.node,
      this.results
    );
  }

  async refresh(): Promise<void> {
    this.status.busy('Adding up…');
    try {
      const report = await requestAPI<SpendReport>('spend');
      this.status.clear();
      this.draw(report);
    } catch (error) {
      this.status.error(error);
    }
  }

  private draw(report: SpendReport): void {
    this.results.textContent = '';
    this.results.append(
      element('div', { class: 'gpu-assist-title' }, `${report.period.label}: `,
        element('span', { class: 'gpu-assist-total' }, money(report.total, report.currency)),
        ` spent, ${money(report.committed, report.currency)} committed`),
      heading('Daily'),
      dailyChart(report)
    );
    for (const budget of report.budgets) {
      this.results.append(element('div', { class: 'gpu-assist-budget' + (budget.over ? ' gpu-assist-warning' : '') },
        budget.line));
    }
    const groups = element('div', { class: 'gpu-assist-columns' });
    for (const group of ['project', 'requester']) {
      if (report.groups[group]) {
        groups.append(element('div', {}, groupTable(group, report.groups[group], report.currency)));
      }
    }
    this.results.append(groups);
    for (const line of report.notes) {
      this.results.append(note(line));
    }
  }

  protected onAfterShow(): void {
    void this.refresh();
  }
}
