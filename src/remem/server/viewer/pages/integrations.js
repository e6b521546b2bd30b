// Cross-agent integrations: detected agents with install / remove; Advanced → add another agent (discovery).
import { api } from '../api.js';
import { t } from '../i18n.js';
import { h, agentBadge, emptyState, errorBox, loading, toast, confirmDialog } from '../ui.js';
import { jobPanel } from '../jobview.js';

const DEFAULT_PRESETS = ['kimi code', 'zcode', 'minimax code', 'coder'];

// The integrations module may answer a list or a mapping; normalise to a list of objects.
function normalise(data) {
  const raw = data && data.integrations !== undefined ? data.integrations : data;
  if (Array.isArray(raw)) return raw;
  if (raw && typeof raw === 'object') return Object.entries(raw).map(([agent, v]) => ({ agent, ...(typeof v === 'object' ? v : { status: v }) }));
  return [];
}

function isInstalled(it) {
  if (typeof it.installed === 'boolean') return it.installed;
  return ['installed', 'ok', 'active'].includes(String(it.status || it.state || ''));
}

export function render(root) {
  let alive = true;
  let panel = null;
  const listSlot = h('div', { id: 'integrations-list' }, loading());
  root.append(
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, t('integrations.title')), h('p', {}, t('integrations.subtitle')))),
    listSlot, advanced());

  async function load() {
    try {
      const data = await api('/integrations');
      if (!alive) return;
      const items = normalise(data).filter((it) => it.detected !== false);
      if (!items.length) {
        listSlot.replaceChildren(h('div', { class: 'card' }, emptyState(t('integrations.empty_title'), t('integrations.empty_text'))));
        return;
      }
      listSlot.replaceChildren(h('div', { class: 'grid-2' }, ...items.map(cardFor)));
    } catch (e) {
      listSlot.replaceChildren(h('div', { class: 'card' }, e.status === 503 ? h('div', { class: 'note' }, t('integrations.unavailable')) : null, errorBox(e)));
    }
  }

  function cardFor(it) {
    const agent = it.agent || it.name;
    const installed = isInstalled(it) || !!it.partial;
    const err = h('div', {});
    const btn = h('button', { class: installed ? 'danger' : 'primary', 'data-agent': agent,
      id: `integration-${agent}`, onclick: () => toggle(agent, installed, btn, err) },
    installed ? t('integrations.remove') : t('integrations.install'));
    const kind = it.kind || it.mechanism || it.type || '';
    const where = it.config_dir || it.path || it.config_path || it.location || '';
    const hooks = Array.isArray(it.hooks_expected) && it.hooks_expected.length
      ? t('integrations.hooks', { n: (it.hooks || []).length, total: it.hooks_expected.length }) : '';
    const files = it.files && typeof it.files === 'object'
      ? Object.entries(it.files).map(([name, ok]) => h('span', { class: ok ? 'chip why' : 'chip' }, t('integrations.file.' + name, {}, name))) : [];
    // `partial` means "something of remem is there"; it is partly installed only when not fully installed
    const badge = it.partial && !isInstalled(it) ? h('span', { class: 'badge warn' }, t('integrations.partial'))
      : h('span', { class: installed ? 'badge ok' : 'badge' }, installed ? t('integrations.installed') : t('integrations.not_installed'));
    return h('div', { class: 'card', 'data-integration': agent },
      h('div', { class: 'job-line' }, h('div', {}, h('b', {}, it.label || agent), ' ', badge), btn),
      h('div', { class: 'meta muted' }, agentBadge(agent), kind ? ' ' + t('integrations.kind.' + kind, {}, kind) : '', hooks ? ' · ' + hooks : ''),
      files.length ? h('div', { class: 'chips' }, ...files) : null,
      where ? h('div', { class: 'faint mono' }, where) : null,
      it.error ? errorBox({ message: it.error }) : null,
      it.detail || it.message ? h('div', { class: 'faint' }, it.detail || it.message) : null,
      err);
  }

  async function toggle(agent, installed, btn, err) {
    btn.disabled = true;
    err.replaceChildren();
    try {
      const path = `/integrations/${encodeURIComponent(agent)}/${installed ? 'remove' : 'install'}`;
      let r = await api(path, { method: 'POST' });
      if (!installed && r.result && r.result.status === 'needs_confirmation') {
        const notes = (r.result.notes || []).join('\n');
        const replace = await confirmDialog({ title: t('integrations.replace_title', { agent }),
          body: notes || t('integrations.replace_body'), confirm: t('integrations.replace_confirm') });
        if (replace) r = await api(path + '?replace=true', { method: 'POST' });
      }
      toast(installed ? t('integrations.removed', { agent }) : t('integrations.installed_toast', { agent }));
      load();
    } catch (e) {
      btn.disabled = false;
      err.replaceChildren(errorBox(e));
    }
  }

  function advanced() {
    const name = h('input', { type: 'text', id: 'custom-agent-name', placeholder: t('integrations.name_placeholder'), size: 24 });
    const paths = h('textarea', { id: 'custom-agent-paths', rows: 2, placeholder: t('integrations.paths_placeholder') });
    const err = h('div', {});
    const jobSlot = h('div', {});
    const presets = h('div', { class: 'chips' }, ...DEFAULT_PRESETS.map((p) => h('button', { type: 'button', class: 'small', onclick: () => { name.value = p; name.focus(); } }, p)));
    api('/sources').then((d) => {
      if (d && d.presets) presets.replaceChildren(...d.presets.map((p) => h('button', { type: 'button', class: 'small', onclick: () => { name.value = p; name.focus(); } }, p)));
    }).catch(() => {});
    const form = h('form', { onsubmit: async (e) => {
      e.preventDefault();
      err.replaceChildren();
      if (!name.value.trim()) { err.replaceChildren(errorBox({ message: t('integrations.name_required') })); return; }
      try {
        const r = await api('/sources/add', { method: 'POST', body: { name: name.value.trim(), paths: paths.value.split('\n').map((s) => s.trim()).filter(Boolean) } });
        if (panel) panel.stop();
        panel = jobPanel(r.job, { onFinish: () => load() });
        jobSlot.replaceChildren(panel.el);
      } catch (e2) { err.replaceChildren(errorBox(e2)); }
    } },
    h('div', { class: 'block' }, h('h3', {}, t('integrations.presets')), presets),
    h('div', { class: 'block' }, h('label', {}, t('integrations.agent_name')), h('div', { class: 'search-row' }, name,
      h('button', { class: 'primary', type: 'submit', id: 'start-discovery' }, t('integrations.start_discovery')))),
    h('div', { class: 'block' }, h('label', { class: 'muted' }, t('integrations.paths_label')), paths),
    err);
    return h('details', { class: 'card', id: 'advanced' }, h('summary', {}, h('b', {}, t('integrations.advanced')), ' — ', t('integrations.add_other')),
      h('p', { class: 'muted' }, t('integrations.add_other_help')), form, jobSlot);
  }

  load();
  return () => { alive = false; if (panel) panel.stop(); };
}
