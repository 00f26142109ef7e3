/**
 * Requests: pending, running and recent requests as the Jupyter user sees them (`requests`), with Approve and
 * Reject only on those the policy lets this user decide (`may_decide`; `why_not` otherwise) and the budget lines
 * the Slack card shows. The server decides again on the click: a button is a convenience, never the check.
 */
import { Widget } from '@lumino/widgets';

import { Status, button, element, heading, money, note } from './dom';
import { requestAPI } from './request';

interface Budget {
  name: string;
  over: boolean;
  line: string;
}

export interface RequestItem {
  id: string;
  kind: string;
  requester: string;
  state: string;
  currency: string;
  estimated_cost: string | null;
  hourly_price: string | null;
  created_at: string;
  expires_at: string;
  approver: string | null;
  instance_ids: string[];
  ends_at: string | null;
  error: string | null;
  spec: Record<string, any>;
  may_decide: boolean;
  why_not: string;
  budgets: Budget[];
}

const POLL_MS = 10000;
const LIVE = ['approved', 'launching', 'running', 'stopping'];

/** One line for a request's spec, as `describe` says it in the other faces. */
export function summary(item: RequestItem): string {
  const spec = item.spec;
  if (item.kind === 'stop') {
    return `stop ${(spec.instance_ids ?? []).join(', ')}`;
  }
  const what = `${spec.instances > 1 ? spec.instances + '× ' : ''}${spec.instance_type} (${spec.gpus}× ${spec.gpu})`;
  if (item.kind === 'extend') {
    return `extend ${spec.launch_request} by ${Math.round(spec.extra_s / 3600)} h · ${what}`;
  }
  return `${what} · ${spec.pricing_model} · ${spec.zone || spec.region} · ${Math.round(spec.duration_s / 3600)} h`;
}

export class RequestsTab extends Widget {
  private status = new Status();
  private lists = element('div', { class: 'gpu-assist-results' });
  private timer: number | undefined;

  constructor() {
    super();
    this.addClass('gpu-assist-tab');
    this.id = 'gpu-assist-requests';
    this.title.label = 'Requests';
    this.node.append(
      element('div', { class: 'gpu-assist-actions' },
        button('Refresh', () => void this.refresh(), { 'aria-label': 'Refresh the requests' })),
      this.status.node,
      this.lists
    );
  }

  async refresh(): Promise<void> {
    try {
      const items = await requestAPI<RequestItem[]>('requests');
      this.status.clear();
      this.draw(items);
    } catch (error) {
      this.status.error(error);
    }
  }

  private draw(items: RequestItem[]): void {
    const pending = items.filter(i => i.state === 'pending' && i.why_not !== 'it has expired');
    const running = items.filter(i => LIVE.includes(i.state));
    const recent = items.filter(i => !pending.includes(i) && !running.includes(i));
    this.lists.textContent = '';
    for (const [title, group] of [['Pending', pending], ['Running', running], ['Recent', recent]] as
      [string, RequestItem[]][]) {
      this.lists.append(heading(`${title} (${group.length})`));
      if (!group.length) {
        this.lists.append(note('none'));
      }
      const list = element('ul', { class: 'gpu-assist-requests', 'aria-label': title + ' requests' });
      for (const item of group) {
        list.append(this.card(item));
      }
      this.lists.append(list);
    }
  }

  private card(item: RequestItem): HTMLElement {
    const cost = item.estimated_cost === null ? '' : ' · est. ' + money(Number(item.estimated_cost), item.currency);
    const node = element('li', { class: `gpu-assist-request gpu-assist-state-${item.state}`, 'data-id': item.id },
      element('div', { class: 'gpu-assist-plan-head' },
        element('span', { class: 'gpu-assist-provider' }, `${item.id}`),
        element('span', { class: 'gpu-assist-badge' }, item.state)),
      element('div', {}, summary(item)),
      note(`${item.kind} by ${item.requester}${cost}` + (item.approver ? ` · decided by ${item.approver}` : '')));
    if (item.instance_ids.length) {
      node.append(note('instances: ' + item.instance_ids.join(', ')));
    }
    if (item.error) {
      node.append(element('div', { class: 'gpu-assist-error' }, item.error));
    }
    for (const budget of item.budgets) {
      node.append(element('div', { class: 'gpu-assist-budget' + (budget.over ? ' gpu-assist-warning' : '') },
        budget.line));
    }
    if (item.may_decide) {
      const decide = (decision: 'approve' | 'reject') => async () => {
        node.querySelectorAll('button').forEach(b => (b.disabled = true));
        this.status.busy(`${decision === 'approve' ? 'Approving' : 'Rejecting'} ${item.id}…`);
        try {
          await requestAPI(`requests/${item.id}/${decision}`, {}, { reason: 'from JupyterLab' });
          this.status.clear();
        } catch (error) {
          this.status.error(error);
        }
        await this.refresh();
      };
      node.append(element('div', { class: 'gpu-assist-actions' },
        button('Approve', () => void decide('approve')(), {
          class: 'jp-mod-styled jp-mod-accept gpu-assist-button', 'aria-label': `Approve ${item.id}`
        }),
        button('Reject', () => void decide('reject')(), {
          class: 'jp-mod-styled jp-mod-warn gpu-assist-button', 'aria-label': `Reject ${item.id}`
        })));
    } else if (item.state === 'pending' && item.why_not) {
      node.append(note(`you cannot decide it: ${item.why_not}`));
    }
    return node;
  }

  protected onAfterShow(): void {
    void this.refresh();
    this.timer = window.setInterval(() => void this.refresh(), POLL_MS);
  }

  protected onAfterHide(): void {
    window.clearInterval(this.timer);
  }

  dispose(): void {
    window.clearInterval(this.timer);
    super.dispose();
  }
}
