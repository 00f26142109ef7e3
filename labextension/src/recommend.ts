/**
 * Recommend: a workload form (kind, model size, tokens, deadline, budget, anything else in the grammar's words)
 * → the plans the `recommend` verb ranks, each with its reasons and assumptions folded under it.
 */
import { Widget } from '@lumino/widgets';

import { Status, element, folded, money, note, select } from './dom';
import { requestAPI } from './request';

interface Plan {
  gpu: string;
  gpu_count: number;
  instances: number;
  provider: string;
  region: string;
  zone: string;
  instance_type: string;
  pricing_model: string;
  strategy: string;
  hours: number;
  total: number;
  currency: string;
  meets_deadline: boolean;
  within_budget: boolean | null;
  verified: boolean;
  reasons: string[];
}

/** The recommend route's answer (gpu_assist/render/json.py `recommendation`). */
interface Recommendation {
  currency: string;
  plans: Plan[];
  rejected: Plan[];
  not_planned: string[];
  reasoning: string[];
  assumptions: string[];
}

function field(label: string, name: string, value: string, placeholder: string): [HTMLLabelElement, HTMLInputElement] {
  const input = element('input', { type: 'text', class: 'jp-mod-styled', name, value, placeholder });
  return [element('label', { class: 'gpu-assist-field' }, element('span', {}, label), input), input];
}

export class RecommendTab extends Widget {
  private kind = select('Workload kind', [['finetune', 'fine-tune'], ['train', 'train'], ['serve', 'serve']], 'kind');
  private size: HTMLInputElement;
  private tokens: HTMLInputElement;
  private deadline: HTMLInputElement;
  private budget: HTMLInputElement;
  private extra: HTMLInputElement;
  private status = new Status();
  private results = element('div', { class: 'gpu-assist-results' });

  constructor() {
    super();
    this.addClass('gpu-assist-tab');
    this.id = 'gpu-assist-recommend';
    this.title.label = 'Recommend';
    const form = element('form', { class: 'gpu-assist-form gpu-assist-grid', 'aria-label': 'Workload' });
    const [sizeLabel, size] = field('model size', 'size', '7B', '7B');
    const [tokensLabel, tokens] = field('tokens', 'tokens', '2B', '2B (train, fine-tune)');
    const [deadlineLabel, deadline] = field('deadline', 'deadline', '48h', '72h');
    const [budgetLabel, budget] = field('budget', 'budget', '', '5000');
    const [extraLabel, extra] = field('more', 'extra', '', 'method=lora');
    [this.size, this.tokens, this.deadline, this.budget, this.extra] = [size, tokens, deadline, budget, extra];
    form.append(
      element('label', { class: 'gpu-assist-field' }, element('span', {}, 'kind'), this.kind),
      sizeLabel, tokensLabel, deadlineLabel, budgetLabel, extraLabel,
      element('button', { type: 'submit', class: 'jp-mod-styled jp-mod-accept' }, 'Recommend')
    );
    form.addEventListener('submit', event => {
      event.preventDefault();
      void this.recommend();
    });
    this.node.append(form, this.status.node, this.results);
  }

  words(): string {
    const words = [this.kind.value, this.size.value.trim()];
    for (const [name, input] of [['tokens', this.tokens], ['deadline', this.deadline], ['budget', this.budget]] as
      [string, HTMLInputElement][]) {
      if (input.value.trim()) {
        words.push(`${name}=${input.value.trim()}`);
      }
    }
    words.push(this.extra.value.trim());
    return words.filter(Boolean).join(' ') + ' top=5';
  }

  async recommend(): Promise<void> {
    this.status.busy('Planning…');
    try {
      const answer = await requestAPI<Recommendation>('recommend', { q: this.words() });
      this.status.clear();
      this.draw(answer);
    } catch (error) {
      this.results.textContent = '';
      this.status.error(error);
    }
  }

  private draw(answer: Recommendation): void {
    this.results.textContent = '';
    if (!answer.plans.length) {
      this.results.append(note('No plan fits: the reasoning says why.'));
    }
    const list = element('ol', { class: 'gpu-assist-plans', 'aria-label': 'Plans, best first' });
    answer.plans.forEach((plan, index) => {
      const where = plan.zone || plan.region;
      const flags = [
        plan.meets_deadline ? '' : 'misses the deadline',
        plan.within_budget === false ? 'over budget' : '',
        plan.verified ? '' : 'unverified price'
      ].filter(Boolean);
      const item = element('li', { class: 'gpu-assist-plan' + (index === 0 ? ' gpu-assist-cheapest' : '') },
        element('div', { class: 'gpu-assist-plan-head' },
          element('span', { class: 'gpu-assist-provider' }, `${plan.gpu_count}× ${plan.gpu}`),
          element('span', { class: 'gpu-assist-total' }, money(plan.total, plan.currency))),
        element('div', { class: 'gpu-assist-note' },
          `${plan.provider} ${plan.instances > 1 ? plan.instances + '× ' : ''}${plan.instance_type} · ` +
          `${plan.pricing_model} · ${where} · ${plan.hours.toFixed(1)} h · ${plan.strategy}`));
      if (flags.length) {
        item.append(element('div', { class: 'gpu-assist-warning' }, flags.join(' · ')));
      }
      if (plan.reasons.length) {
        item.append(folded('Why', element('ul', {}, ...plan.reasons.map(r => element('li', {}, r)))));
      }
      list.append(item);
    });
    this.results.append(list);
    const lines = (items: string[]) => element('ul', {}, ...items.map(line => element('li', {}, line)));
    this.results.append(folded(`Reasoning (${answer.reasoning.length} GPUs considered)`, lines(answer.reasoning)));
    this.results.append(folded('Assumptions', lines(answer.assumptions)));
    if (answer.not_planned.length) {
      this.results.append(folded('Not planned', lines(answer.not_planned)));
    }
  }
}
