/**
 * GPUs: this server's GPUs (`util`, polled while the tab shows) with a sparkline of the last minutes and a call-out
 * when one has stayed idle, and the team's fleet from EC2 and CloudWatch (`util?fleet=1`) with its idle instances
 * and a Request stop button (`stop`, asked as the Jupyter user, decided by an approver like any request).
 */
import { Widget } from '@lumino/widgets';

import { Status, button, element, heading, money, note, svg } from './dom';
import { requestAPI } from './request';

interface GpuSample {
  index: number;
  name: string | null;
  utilization_gpu_pct: number | null;
  memory_used_mib: number | null;
  memory_total_mib: number | null;
}

interface Snapshot {
  taken_at: number;
  gpus: GpuSample[];
  reason: string | null;
}

interface InstanceUsage {
  instance_id: string;
  instance_type: string;
  zone: string;
  lifecycle: string;
  request_id: string | null;
  gpus_reporting: number;
  gpu_utilization_avg_pct: number | null;
  coverage: number;
  idle: boolean;
  hourly_cost: number | null;
  currency: string;
  note: string;
}

/** The fleet route's answer (gpu_assist/render/json.py `_fleet`). */
interface FleetReport {
  region: string;
  window_s: number;
  threshold_pct: number;
  instances: InstanceUsage[];
  idle: string[];
  wasted_per_hour: number;
}

const POLL_MS = 2000;
const HISTORY = 150; // five minutes of samples
const IDLE_PCT = 10;
const IDLE_AFTER_S = 60;

/** A polyline of percentages (0–100) across the samples seen, oldest on the left, with the idle threshold dashed. */
export function sparkline(values: number[], label: string): SVGSVGElement {
  const width = 120;
  const height = 24;
  const line = svg('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'none',
    class: 'gpu-assist-sparkline', role: 'img', 'aria-label': label });
  const y = (pct: number) => (height - (pct / 100) * (height - 2) - 1).toFixed(1);
  const step = width / Math.max(values.length - 1, 1);
  const points = values.map((value, i) => `${(i * step).toFixed(1)},${y(value)}`);
  line.append(svg('line', { x1: 0, x2: width, y1: y(IDLE_PCT), y2: y(IDLE_PCT), class: 'gpu-assist-sparkline-idle' }));
  line.append(svg('polyline', { points: points.join(' '), class: 'gpu-assist-sparkline-line' }));
  return line;
}

function minutes(samples: { at: number }[]): string {
  const seconds = samples.length > 1 ? samples[samples.length - 1].at - samples[0].at : 0;
  return seconds >= 90 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds)} s`;
}

export class GpusTab extends Widget {
  private status = new Status();
  private local = element('div', { class: 'gpu-assist-util' });
  private fleetStatus = new Status();
  private fleet = element('div', { class: 'gpu-assist-fleet' });
  private region = element('input', { type: 'text', class: 'jp-mod-styled', name: 'fleet-region',
    placeholder: 'region: the default', 'aria-label': 'Fleet region (us-east-1)' });
  private history = new Map<number, { at: number; pct: number }[]>();
  private timer: number | undefined;

  constructor() {
    super();
    this.addClass('gpu-assist-tab');
    this.id = 'gpu-assist-gpus';
    this.title.label = 'GPUs';
    const form = element('form', { class: 'gpu-assist-row', 'aria-label': 'Fleet' },
      this.region, element('button', { type: 'submit', class: 'jp-mod-styled' }, 'Load fleet'));
    form.addEventListener('submit', event => {
      event.preventDefault();
      void this.loadFleet();
    });
    this.node.append(heading('This server'), this.status.node, this.local, heading('Team fleet'), form,
      this.fleetStatus.node, this.fleet);
  }

  async poll(): Promise<void> {
    try {
      const snapshot = await requestAPI<Snapshot>('util');
      this.status.clear();
      this.showLocal(snapshot);
    } catch (error) {
      this.status.error(error);
    }
  }

  private showLocal(snapshot: Snapshot): void {
    this.local.textContent = '';
    if (!snapshot.gpus.length) {
      this.local.append(note('No GPUs: ' + (snapshot.reason || 'none found')));
      return;
    }
    const now = snapshot.taken_at;
    for (const gpu of snapshot.gpus) {
      const seen = this.history.get(gpu.index) ?? [];
      seen.push({ at: now, pct: gpu.utilization_gpu_pct ?? 0 });
      this.history.set(gpu.index, seen.slice(-HISTORY));
      const kept = this.history.get(gpu.index)!;
      const memory = `${((gpu.memory_used_mib ?? 0) / 1024).toFixed(1)}/${((gpu.memory_total_mib ?? 0) / 1024).toFixed(0)} GiB`;
      const row = element('div', { class: 'gpu-assist-gpu', 'data-index': String(gpu.index) },
        element('div', { class: 'gpu-assist-plan-head' },
          element('span', {}, `GPU ${gpu.index} ${gpu.name ?? ''}`),
          element('span', { class: 'gpu-assist-total' }, `${gpu.utilization_gpu_pct ?? 'n/a'}%`)),
        sparkline(kept.map(s => s.pct), `GPU ${gpu.index} utilization over the last ${minutes(kept)}`),
        note(`memory ${memory} · use over the last ${minutes(kept)}`));
      const busy = kept.filter(s => s.pct >= IDLE_PCT);
      const idleSince = busy.length ? busy[busy.length - 1].at : kept[0].at;
      const idleFor = now - idleSince;
      if (idleFor >= IDLE_AFTER_S && (gpu.utilization_gpu_pct ?? 0) < IDLE_PCT) {
        row.append(element('div', { class: 'gpu-assist-warning gpu-assist-idle', role: 'note' },
          `idle for ${Math.floor(idleFor / 60)} min (under ${IDLE_PCT}%): free it if the job is done`));
      }
      this.local.append(row);
    }
  }

  async loadFleet(): Promise<void> {
    this.fleetStatus.busy('Asking EC2 and CloudWatch…');
    try {
      const params: Record<string, string> = { fleet: '1' };
      if (this.region.value.trim()) {
        params.region = this.region.value.trim();
      }
      const report = await requestAPI<FleetReport>('util', params);
      this.fleetStatus.clear();
      this.showFleet(report);
    } catch (error) {
      this.fleet.textContent = '';
      this.fleetStatus.error(error);
    }
  }

  private showFleet(report: FleetReport): void {
    this.fleet.textContent = '';
    const minutes = Math.round(report.window_s / 60);
    this.fleet.append(note(`${report.region}: ${report.instances.length} instances, ${report.idle.length} idle ` +
      `(under ${report.threshold_pct}% over ${minutes} min)` +
      (report.idle.length ? `, ${money(report.wasted_per_hour, report.instances[0]?.currency ?? 'USD')}/h idle` : '')));
    const list = element('ul', { class: 'gpu-assist-requests', 'aria-label': 'Fleet instances' });
    const ordered = [...report.instances].sort((a, b) => Number(b.idle) - Number(a.idle));
    for (const usage of ordered) {
      const pct = usage.gpu_utilization_avg_pct;
      const item = element('li', { class: 'gpu-assist-request' + (usage.idle ? ' gpu-assist-idle-instance' : ''),
        'data-id': usage.instance_id },
        element('div', { class: 'gpu-assist-plan-head' },
          element('span', { class: 'gpu-assist-provider' }, usage.instance_id),
          element('span', { class: usage.idle ? 'gpu-assist-badge gpu-assist-badge-warn' : 'gpu-assist-badge' },
            usage.idle ? 'idle' : pct === null ? 'no data' : `${pct.toFixed(0)}%`)),
        note(`${usage.instance_type} · ${usage.lifecycle} · ${usage.zone}` +
          (usage.hourly_cost === null ? '' : ` · ${money(usage.hourly_cost, usage.currency)}/h`) +
          (usage.request_id ? ` · ${usage.request_id}` : '')));
      if (usage.note) {
        item.append(note(usage.note));
      }
      if (usage.request_id) {
        const stop = button('Request stop', () => void this.requestStop(usage, report.region, stop), {
          'aria-label': `Request a stop of ${usage.instance_id}`
        });
        item.append(element('div', { class: 'gpu-assist-actions' }, stop));
      }
      list.append(item);
    }
    this.fleet.append(list);
  }

  private async requestStop(usage: InstanceUsage, region: string, stop: HTMLButtonElement): Promise<void> {
    stop.disabled = true;
    try {
      const record = await requestAPI<{ id: string; state: string }>('stop', {},
        { q: `${usage.instance_id} region=${region}` });
      this.fleetStatus.busy(`Stop of ${usage.instance_id} asked: ${record.id} is ${record.state} (Requests tab)`);
    } catch (error) {
      stop.disabled = false;
      this.fleetStatus.error(error);
    }
  }

  protected onAfterShow(): void {
    void this.poll();
    this.timer = window.setInterval(() => void this.poll(), POLL_MS);
    if (!this.fleet.childNodes.length) {
      void this.loadFleet();
    }
  }

  protected onAfterHide(): void {
    window.clearInterval(this.timer);
  }

  dispose(): void {
    window.clearInterval(this.timer);
    super.dispose();
  }
}
