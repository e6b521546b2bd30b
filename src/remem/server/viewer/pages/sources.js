// Sources and sync: what was found on this machine, sync new / deep rescan, live progress with controls.
import { api, onEvent } from '../api.js';
import { t } from '../i18n.js';
import { h, timeEl, agentBadge, emptyState, errorBox, loading, confirmDialog, fmtNum, fmtBytes, toast } from '../ui.js';
import { jobPanel } from '../jobview.js';
import { navigate } from '../nav.js';

export function render(root) {
  let alive = true;
  let panel = null;
  const jobSlot = h('div', { id: 'job-slot' });
  const tableSlot = h('div', { class: 'card', id: 'sources-card' }, loading());
  const actionErr = h('div', {});
  const syncBtn = h('button', { class: 'primary', id: 'sync-new', onclick: () => startSync(null) }, t('sources.sync_new'));
  const rescanBtn = h('button', { id: 'deep-rescan', onclick: rescan }, t('sources.deep_rescan'));
  root.append(
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, t('sources.title')), h('p', {}, t('sources.subtitle'))),
      h('div', { class: 'filters' }, rescanBtn, syncBtn)),
    actionErr, jobSlot, tableSlot);

  function showJob(job) {
    if (panel && panel.job.id === job.id) return;
    if (panel) panel.stop();
    panel = jobPanel(job, { onFinish: (j) => { if (j.status === 'done') loadSources(); } });
    jobSlot.replaceChildren(panel.el);
  }

  async function startSync(agent) {
    actionErr.replaceChildren();
    try {
      const r = agent ? await api(`/sources/${encodeURIComponent(agent)}/sync`, { method: 'POST' })
        : await api('/sources/sync', { method: 'POST', body: {} });
      if (r.already_queued) toast(t('sources.already_queued'));
      showJob(r.job);
    } catch (e) { actionErr.replaceChildren(errorBox(e)); }
  }

  async function rescan() {
    actionErr.replaceChildren();
    try {
      const first = await api('/sources/rescan', { method: 'POST', body: {} });
      const ok = await confirmDialog({ title: t('sources.rescan_title'), body: t('sources.rescan_body'), confirm: t('sources.rescan_confirm') });
      if (!ok) return;
      const r = await api('/sources/rescan', { method: 'POST', body: { confirm: first.confirm } });
      showJob(r.job);
    } catch (e) { actionErr.replaceChildren(errorBox(e)); }
  }

  async function loadJob() {
    try {
      const data = await api('/jobs?limit=30');
      const syncJobs = (data.jobs || []).filter((j) => j.kind === 'sync');
      const active = syncJobs.find((j) => ['running', 'queued', 'paused'].includes(j.status));
      if (active || syncJobs[0]) showJob(active || syncJobs[0]);
    } catch (e) { /* the sources card shows the error */ }
  }

  async function loadSources() {
    try {
      const data = await api('/sources');
      if (!alive) return;
      const list = data.sources || [];
      if (!list.length) {
        tableSlot.replaceChildren(emptyState(t('sources.empty_title'), t('sources.empty_text'),
          h('button', { onclick: () => navigate('integrations') }, t('sources.add_other'))));
        return;
      }
      const showLast = list.some((s) => s.last_result && typeof s.last_result === 'object');
      const cols = ['agent', 'location', 'history', 'last_sync', ...(showLast ? ['last_result'] : []), ''];
      tableSlot.replaceChildren(h('table', { id: 'sources-table' },
        h('thead', {}, h('tr', {}, ...cols.map((k) => h('th', {}, k ? t('sources.col.' + k) : '')))),
        h('tbody', {}, ...list.map((s) => {
          const last = s.last_result || {};
          return h('tr', { 'data-source': s.name },
            h('td', {}, agentBadge(s.agent), s.custom ? h('span', { class: 'faint' }, ' ' + t('sources.custom')) : null),
            h('td', {}, h('div', { class: 'mono' }, (s.paths || [s.path]).filter(Boolean).join(', ')), h('div', { class: 'faint' }, s.format || '')),
            h('td', {}, s.units !== undefined ? t('sources.units', { n: fmtNum(s.units) }) : '—', s.bytes ? h('div', { class: 'faint' }, fmtBytes(s.bytes)) : null),
            h('td', {}, s.last_sync_at ? timeEl(s.last_sync_at) : h('span', { class: 'faint' }, t('sources.never'))),
            showLast ? h('td', {}, last.turns_added !== undefined ? t('sources.last_added', { n: fmtNum(last.turns_added) }) : '—',
              last.failed ? h('div', { class: 'inline-status bad' }, t('sources.last_failed', { n: fmtNum(last.failed) })) : null) : null,
            h('td', {}, h('button', { class: 'small', onclick: () => startSync(s.name) }, t('sources.sync_one'))));
        }))));
    } catch (e) {
      if (e.status === 503) {
        syncBtn.disabled = true; rescanBtn.disabled = true;
        tableSlot.replaceChildren(h('div', { class: 'note' }, t('sources.unavailable')), errorBox(e));
      } else tableSlot.replaceChildren(errorBox(e));
    }
  }

  const off = onEvent((type, data) => {
    if (type === 'job' && data.kind === 'sync' && ['queued', 'running'].includes(data.status)) showJob(data);
  });
  loadSources();
  loadJob();
  return () => { alive = false; off(); if (panel) panel.stop(); };
}
