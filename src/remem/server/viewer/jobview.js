// A live job panel: progress bar fed by SSE, pause / resume / stop, and the sync counts explained.
import { api, onEvent } from './api.js';
import { t } from './i18n.js';
import { h, progressBar, setProgress, statusBadge, errorBox, fmtNum } from './ui.js';

export const COUNT_KEYS = ['messages_scanned', 'unique_messages', 'turns_added', 'turns_updated', 'duplicates',
  'skipped_incomplete', 'skipped_oversize', 'failed'];

export function countsGrid(counts) {
  return h('div', { class: 'counts', id: 'sync-counts' }, ...COUNT_KEYS.map((k) => h('div', { class: 'count', 'data-key': k },
    h('div', { class: 'n' }, fmtNum(counts ? counts[k] ?? 0 : 0)), h('div', { class: 'l' }, t('count.' + k)))));
}

// Renders the job with id `jobId` into a card and keeps it live. Returns {el, stop()}.
export function jobPanel(job, { onFinish } = {}) {
  const bar = progressBar(job.fraction, job.status);
  bar.id = 'job-progress';
  const label = h('span', { id: 'job-label' });
  const pct = h('span', { class: 'mono', id: 'job-pct' });
  const statusSlot = h('span', {});
  const err = h('div', {});
  const pause = h('button', { class: 'small', id: 'job-pause', onclick: () => act('pause') }, t('job.pause'));
  const resume = h('button', { class: 'small', id: 'job-resume', onclick: () => act('resume') }, t('job.resume'));
  const stop = h('button', { class: 'small danger', id: 'job-stop', onclick: () => act('stop') }, t('job.stop'));
  const countsSlot = h('div', {});
  const resultSlot = h('div', {});
  const el = h('div', { class: 'card', id: 'job-panel', 'data-job': String(job.id) },
    h('div', { class: 'job-line' }, h('div', {}, h('b', {}, t('job.kind.' + job.kind, {}, job.kind)), ' ', statusSlot),
      h('div', { class: 'filters' }, pause, resume, stop)),
    bar, h('div', { class: 'job-line muted' }, label, pct), err, countsSlot, resultSlot);
  let current = job;
  let finished = false;

  async function act(action) {
    err.replaceChildren();
    try { update(await api(`/jobs/${job.id}/${action}`, { method: 'POST' })); } catch (e) { err.replaceChildren(errorBox(e)); }
  }

  function update(j) {
    if (j.id !== job.id) return;
    current = j;
    const p = j.progress || {};
    statusSlot.replaceChildren(statusBadge(j.status));
    setProgress(bar, j.fraction, j.status);
    pct.textContent = j.status === 'done' ? '100%' : (j.fraction != null ? `${Math.round(j.fraction * 100)}%` : '');
    const active = ['running', 'queued', 'paused'].includes(j.status);
    pause.classList.toggle('hidden', j.status !== 'running');
    resume.classList.toggle('hidden', j.status !== 'paused');
    stop.classList.toggle('hidden', !active);
    label.textContent = describe(j);
    if (j.error) err.replaceChildren(errorBox({ message: j.error }));
    if (j.kind === 'sync') {
      const counts = p.counts || (p.result && p.result.total) || null;
      countsSlot.replaceChildren(countsGrid(counts), h('div', { class: 'explain' }, t('count.explain')));
    }
    if (j.kind === 'discover' && p.result) resultSlot.replaceChildren(discoverResult(p.result));
    if (!active && !finished) {
      finished = true;
      if (onFinish) onFinish(j);
    }
  }

  function describe(j) {
    const p = j.progress || {};
    if (j.status === 'queued') return t('job.waiting');
    if (j.status === 'paused') return t('job.paused_note');
    if (j.status === 'stopped') return t('job.stopped_note');
    if (j.status === 'failed') return t('job.failed_note');
    if (j.status === 'done') return t('job.done_note', { s: (p.elapsed ?? 0).toFixed(1) });
    if (j.kind === 'sync' && p.source) {
      return t('job.sync_source', { source: p.source, done: fmtNum(p.units_done ?? 0), total: fmtNum(p.units_total ?? 0) });
    }
    if (p.total !== undefined) return t('job.items', { done: fmtNum(p.done ?? 0), total: fmtNum(p.total) });
    return t('job.phase.' + (p.phase || 'starting'), {}, p.phase || '');
  }

  update(job);
  const off = onEvent((type, data) => {
    if (type === 'job') update(data);
    if (type === 'hello') for (const j of data.jobs || []) update(j);
  });
  // SSE may have delivered the end before we subscribed: fetch once more shortly.
  setTimeout(async () => { try { update(await api(`/jobs/${job.id}`)); } catch (e) { /* shown on next event */ } }, 400);
  return { el, stop: off, get job() { return current; } };
}

export function discoverResult(r) {
  const rows = [];
  for (const [k, v] of Object.entries(r)) {
    if (v === null || typeof v === 'object') continue;
    rows.push(h('dt', {}, t('discover.' + k, {}, k)), h('dd', {}, String(v)));
  }
  const steps = Array.isArray(r.steps) ? h('ol', { class: 'muted' }, ...r.steps.map((s) => h('li', {}, String(s)))) : null;
  return h('div', { class: 'block', id: 'discover-result' }, h('h3', {}, t('discover.result')), h('dl', { class: 'kv' }, ...rows), steps,
    h('details', {}, h('summary', { class: 'faint' }, t('common.raw')), h('pre', { class: 'pre mono' }, JSON.stringify(r, null, 2))));
}
