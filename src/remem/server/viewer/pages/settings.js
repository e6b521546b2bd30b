// Settings: auto-sync, auto-install, recall budget, embedding model, data path, export / import, clear data.
import { api } from '../api.js';
import { t } from '../i18n.js';
import { h, errorBox, loading, confirmDialog, toast, fmtNum } from '../ui.js';

function get(values, key) {
  return key.split('.').reduce((o, k) => (o && typeof o === 'object' ? o[k] : undefined), values);
}

export function render(root) {
  let alive = true;
  const body = h('div', { class: 'stack' }, loading());
  root.append(h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, t('settings.title')), h('p', {}, t('settings.subtitle')))), body);

  async function save(key, value, statusEl) {
    statusEl.className = 'inline-status';
    statusEl.textContent = t('settings.saving');
    try {
      const r = await api('/config', { method: 'PATCH', body: { [key]: value } });
      statusEl.className = 'inline-status ok';
      statusEl.textContent = r.restart_required && r.restart_required.length ? t('settings.saved_restart') : t('settings.saved');
      if (r.overridden_by_environment && r.overridden_by_environment.length) statusEl.textContent += ' · ' + t('settings.env_wins');
      return true;
    } catch (e) {
      statusEl.className = 'inline-status bad';
      statusEl.textContent = e.message;
      return false;
    }
  }

  function row(key, label, help, control, env) {
    const statusEl = h('span', { class: 'inline-status', 'data-status': key });
    return [h('div', { class: 'setting', 'data-key': key },
      h('div', {}, h('div', { class: 'label' }, label), h('div', { class: 'help' }, help),
        env ? h('div', { class: 'note' }, t('settings.env_note', { env })) : null),
      h('div', { class: 'control' }, statusEl, control(statusEl)))];
  }

  function toggle(key, values, env) {
    return (statusEl) => {
      const input = h('input', { type: 'checkbox', checked: !!get(values, key), id: 'set-' + key.replace('.', '-') });
      input.addEventListener('change', async () => { if (!(await save(key, input.checked, statusEl))) input.checked = !input.checked; });
      return h('label', { class: 'switch' }, input, h('span', { 'aria-hidden': 'true' }));
    };
  }

  function number(key, values, { min, max, step }) {
    return (statusEl) => {
      const input = h('input', { type: 'number', value: get(values, key), min, max, step, id: 'set-' + key.replace('.', '-'), style: null });
      input.size = 6;
      input.addEventListener('change', () => save(key, Number(input.value), statusEl));
      return input;
    };
  }

  async function load() {
    try {
      const cfg = await api('/config');
      if (!alive) return;
      const v = cfg.values;
      const env = cfg.env_overrides || {};
      const embedders = cfg.embedders || ['default', 'hash'];
      const modelSel = (statusEl) => {
        const sel = h('select', { id: 'set-embedding-model' }, ...embedders.map((m) => h('option', { value: m }, t('embedder.' + m, {}, m))));
        sel.value = get(v, 'embedding.model');
        sel.addEventListener('change', () => save('embedding.model', sel.value, statusEl));
        return sel;
      };
      const budget = (statusEl) => {
        const out = h('span', { class: 'mono' }, fmtNum(get(v, 'recall.token_budget')));
        const input = h('input', { type: 'range', min: 800, max: 4000, step: 100, value: get(v, 'recall.token_budget'), id: 'set-recall-token_budget',
          'aria-label': t('settings.budget') });
        input.addEventListener('input', () => { out.textContent = fmtNum(Number(input.value)); });
        input.addEventListener('change', () => save('recall.token_budget', Number(input.value), statusEl));
        return h('span', { class: 'control' }, input, out);
      };
      const pathBox = h('code', { id: 'data-path' }, cfg.home || cfg.path.replace(/\/config\.yaml$/, ''));
      const pathStatus = h('span', { class: 'inline-status' });
      const importStatus = h('div', {});
      const fileInput = h('input', { type: 'file', accept: '.jsonl,.ndjson,application/x-ndjson', id: 'import-file', class: 'hidden' });
      fileInput.addEventListener('change', () => importFile(fileInput, importStatus));

      body.replaceChildren(
        h('div', { class: 'card' }, h('h2', {}, t('settings.sync_section')),
          ...row('sync.auto', t('settings.auto_sync'), t('settings.auto_sync_help'), toggle('sync.auto', v), env['sync.auto']),
          ...row('sync.interval_seconds', t('settings.interval'), t('settings.interval_help'), number('sync.interval_seconds', v, { min: 30, max: 86400, step: 30 })),
          ...row('integrations.auto_install', t('settings.auto_install'), t('settings.auto_install_help'), toggle('integrations.auto_install', v))),
        h('div', { class: 'card' }, h('h2', {}, t('settings.recall_section')),
          ...row('recall.token_budget', t('settings.budget'), t('settings.budget_help'), budget, env['recall.token_budget']),
          ...row('embedding.enabled', t('settings.embeddings'), t('settings.embeddings_help'), toggle('embedding.enabled', v), env['embedding.enabled']),
          ...row('embedding.model', t('settings.model'), t('settings.model_help'), modelSel, env['embedding.model'])),
        h('div', { class: 'card' }, h('h2', {}, t('settings.data_section')),
          h('div', { class: 'setting' }, h('div', {}, h('div', { class: 'label' }, t('settings.data_path')), h('div', { class: 'help' }, pathBox)),
            h('div', { class: 'control' }, pathStatus,
              h('button', { class: 'small', onclick: () => copy(pathBox.textContent, pathStatus) }, t('settings.copy')),
              h('button', { class: 'small', id: 'open-folder', onclick: () => openFolder(pathStatus) }, t('settings.open_folder')))),
          h('div', { class: 'setting' }, h('div', {}, h('div', { class: 'label' }, t('settings.export')), h('div', { class: 'help' }, t('settings.export_help'))),
            h('div', { class: 'control' },
              h('a', { class: 'btn small', href: '/api/v1/export/jsonl', download: 'remem-export.jsonl', id: 'export-jsonl' }, 'JSONL'),
              h('a', { class: 'btn small primary', href: '/api/v1/export/sqlite', download: 'memory.sqlite', id: 'export-sqlite' }, t('settings.download_sqlite')))),
          h('div', { class: 'setting' }, h('div', {}, h('div', { class: 'label' }, t('settings.import')), h('div', { class: 'help' }, t('settings.import_help')), importStatus),
            h('div', { class: 'control' }, fileInput, h('button', { class: 'small', onclick: () => fileInput.click() }, t('settings.choose_file'))))),
        h('div', { class: 'card danger-zone' }, h('h2', {}, t('settings.danger')),
          h('div', { class: 'setting' }, h('div', {}, h('div', { class: 'label' }, t('settings.clear')), h('div', { class: 'help' }, t('settings.clear_help'))),
            h('div', { class: 'control' }, h('button', { class: 'danger', id: 'clear-data', onclick: clearAll }, t('settings.clear_button'))))));
    } catch (e) {
      body.replaceChildren(errorBox(e));
    }
  }

  async function copy(text, statusEl) {
    try { await navigator.clipboard.writeText(text); statusEl.className = 'inline-status ok'; statusEl.textContent = t('settings.copied'); } catch (e) {
      statusEl.className = 'inline-status bad'; statusEl.textContent = t('settings.copy_failed');
    }
  }

  async function openFolder(statusEl) {
    try { await api('/system/open-data-dir', { method: 'POST' }); statusEl.className = 'inline-status ok'; statusEl.textContent = t('settings.opened'); } catch (e) {
      statusEl.className = 'inline-status bad'; statusEl.textContent = e.message;
    }
  }

  async function importFile(input, statusEl) {
    const file = input.files && input.files[0];
    if (!file) return;
    statusEl.replaceChildren(loading());
    try {
      const r = await api('/import', { method: 'POST', body: file, contentType: 'application/x-ndjson' });
      const c = r.counts || {};
      statusEl.replaceChildren(h('div', { class: 'inline-status ok' }, t('settings.imported', { added: fmtNum(c.added || 0), dup: fmtNum(c.duplicate || 0) })));
    } catch (e) { statusEl.replaceChildren(errorBox(e)); }
    input.value = '';
  }

  async function clearAll() {
    try {
      const first = await api('/data/clear', { method: 'POST', body: {} });
      const w = first.will_delete || {};
      const ok = await confirmDialog({ title: t('settings.clear_title'), danger: true, confirm: t('settings.clear_button'),
        body: t('settings.clear_body', { turns: t('count.memories', { n: fmtNum(w.turns || 0) }), sessions: t('count.sessions', { n: fmtNum(w.sessions || 0) }) }), typeWord: 'delete' });
      if (!ok) return;
      await api('/data/clear', { method: 'POST', body: { confirm: first.confirm } });
      toast(t('settings.cleared'));
    } catch (e) { toast(e.message, true); }
  }

  load();
  return () => { alive = false; };
}
