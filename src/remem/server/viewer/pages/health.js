// Health and logs: daemon status, job queue, database, embedder, recent errors, log tail, doctor.
import { api, onEvent } from '../api.js';
import { t } from '../i18n.js';
import { h, timeEl, statusBadge, errorBox, loading, fmtNum, fmtBytes, absTime, emptyState } from '../ui.js';
import { jobPanel } from '../jobview.js';

export function render(root) {
  let alive = true;
  let panel = null;
  const jobSlot = h('div', { id: 'embed-slot' });
  const top = h('div', { class: 'grid-2', id: 'health-cards' }, loading());
  const jobsCard = h('div', { class: 'card', id: 'jobs-card' }, loading());
  const errorsCard = h('div', { class: 'card', id: 'errors-card' });
  const doctorSlot = h('div', {});
  const logsBox = h('pre', { class: 'logs', id: 'log-tail' }, '…');
  root.append(
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, t('health.title')), h('p', {}, t('health.subtitle'))),
      h('div', { class: 'filters' }, h('button', { id: 'run-doctor', onclick: doctor }, t('health.doctor')),
        h('button', { onclick: refresh }, t('health.refresh')))),
    doctorSlot, jobSlot, top, jobsCard, errorsCard,
    h('div', { class: 'card' }, h('div', { class: 'job-line' }, h('h2', {}, t('health.logs')), h('button', { class: 'small', onclick: loadLogs }, t('health.refresh'))), logsBox));

  // the embedding backlog's time left, from the last measured rate (GET /status: embedder.eta_seconds)
  function eta(emb) {
    if (!emb.enabled || !emb.pending) return null;
    if (emb.eta_seconds == null || !emb.turns_per_s) return h('span', { class: 'muted', id: 'embed-eta' }, t('health.eta_unknown'));
    const s = emb.eta_seconds;
    const left = s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
    return h('span', { class: 'muted', id: 'embed-eta' }, t('health.eta', { eta: left, rate: emb.turns_per_s }));
  }

  function kv(pairs) {
    return h('dl', { class: 'kv' }, ...pairs.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v ?? '—')]));
  }

  async function loadStatus() {
    try {
      const s = await api('/status');
      if (!alive) return;
      const d = s.daemon || {};
      const db = s.database || {};
      const emb = s.embedder || {};
      top.replaceChildren(
        h('div', { class: 'card' }, h('h2', {}, h('span', { class: d.ok ? 'dot ok' : 'dot bad' }), ' ', t('health.daemon')),
          kv([[t('health.state'), t('health.status.' + d.status, {}, d.status)], [t('health.address'), `http://${d.host}:${d.port}`],
            ['PID', String(d.pid)], [t('health.version'), d.version], [t('health.started'), absTime(d.started_at)],
            [t('health.features'), [s.features?.sync ? t('health.sync_on') : t('health.sync_off'), ' · ',
              s.features?.integrations ? t('health.integrations_on') : t('health.integrations_off')]]])),
        h('div', { class: 'card' }, h('h2', {}, t('health.storage')),
          kv([[t('health.db_size'), fmtBytes(db.bytes)], [t('health.db_path'), h('code', {}, db.path || '—')],
            [t('health.embedder'), emb.enabled ? `${emb.loaded || emb.configured}${emb.loaded ? '' : ' (' + t('health.not_loaded') + ')'}` : t('health.disabled')],
            [t('health.pending'), h('span', {}, fmtNum(emb.pending), ' ', eta(emb), ' ', emb.enabled
              ? h('button', { class: 'small', id: 'embed-now', onclick: embedNow }, t('health.embed_now')) : null)], [t('health.embedder_error'), emb.error ? h('span', { class: 'inline-status bad' }, emb.error) : t('health.none')]])));
      const errs = s.recent_errors || [];
      errorsCard.replaceChildren(h('h2', {}, t('health.recent_errors')), errs.length
        ? h('table', {}, h('tbody', {}, ...errs.map((e) => h('tr', {}, h('td', {}, timeEl(e.ts)), h('td', {}, h('span', { class: e.level === 'ERROR' ? 'badge bad' : 'badge warn' }, e.level)),
          h('td', { class: 'mono' }, e.message)))))
        : h('p', { class: 'muted' }, t('health.no_errors')));
    } catch (e) { top.replaceChildren(errorBox(e)); }
  }

  async function loadJobs() {
    try {
      const data = await api('/jobs?limit=25');
      if (!alive) return;
      const jobs = data.jobs || [];
      jobsCard.replaceChildren(h('h2', {}, t('health.jobs')), jobs.length ? h('table', {},
        h('thead', {}, h('tr', {}, ...['#', t('health.kind'), t('health.status_col'), t('health.progress'), t('health.updated'), t('health.error')].map((c) => h('th', {}, c)))),
        h('tbody', {}, ...jobs.map((j) => h('tr', { 'data-job': String(j.id) }, h('td', { class: 'mono' }, String(j.id)),
          h('td', {}, t('job.kind.' + j.kind, {}, j.kind)), h('td', {}, statusBadge(j.status)),
          h('td', { class: 'mono' }, j.status === 'done' ? '100%' : j.fraction != null ? `${Math.round(j.fraction * 100)}%` : '—'),
          h('td', {}, timeEl(j.updated_at)), h('td', { class: 'faint' }, j.error || '')))))
        : emptyState(t('health.no_jobs'), t('health.no_jobs_text')));
    } catch (e) { jobsCard.replaceChildren(errorBox(e)); }
  }

  async function loadLogs() {
    try {
      const data = await api('/logs?lines=300');
      if (!alive) return;
      logsBox.textContent = (data.lines || []).join('\n') || t('health.no_logs');
      logsBox.scrollTop = logsBox.scrollHeight;
    } catch (e) { logsBox.textContent = e.message; }
  }

  async function doctor() {
    doctorSlot.replaceChildren(h('div', { class: 'card' }, loading()));
    try {
      const r = await api('/doctor');
      doctorSlot.replaceChildren(h('div', { class: 'card', id: 'doctor-card' }, h('h2', {}, r.ok ? t('health.doctor_ok') : t('health.doctor_bad')),
        h('table', {}, h('tbody', {}, ...Object.entries(r.checks).map(([name, c]) => h('tr', {},
          h('td', {}, h('span', { class: c.ok ? 'dot ok' : 'dot bad' })), h('td', {}, h('b', {}, name)), h('td', { class: 'mono' }, String(c.detail))))))));
    } catch (e) { doctorSlot.replaceChildren(errorBox(e)); }
  }

  async function embedNow() {
    try {
      const r = await api('/embed', { method: 'POST' });
      if (panel) panel.stop();
      panel = jobPanel(r.job, { onFinish: () => loadStatus() });
      jobSlot.replaceChildren(panel.el);
    } catch (e) { jobSlot.replaceChildren(errorBox(e)); }
  }

  function refresh() { loadStatus(); loadJobs(); loadLogs(); }

  let timer = null;
  const off = onEvent((type) => {
    if (type !== 'job') return;
    clearTimeout(timer);
    timer = setTimeout(loadJobs, 300);
  });
  refresh();
  return () => { alive = false; off(); clearTimeout(timer); if (panel) panel.stop(); };
}
