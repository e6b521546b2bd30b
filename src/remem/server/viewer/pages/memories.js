// Memories: search (with why each result matched), filters, list, detail with the tool trajectory, delete.
import { api } from '../api.js';
import { t } from '../i18n.js';
import {
  h, icon, timeEl, absTime, agentBadge, statusBadge, emptyState, errorBox, loading, confirmDialog, toast, section, fmtNum,
} from '../ui.js';
import { navigate, replaceParams } from '../nav.js';

const PERIODS = { '': null, '1d': 86400, '7d': 7 * 86400, '30d': 30 * 86400, '365d': 365 * 86400 };

export function render(root, params) {
  const st = {
    q: params.get('q') || '', agent: params.get('agent') || '', project: params.get('project') || '',
    period: params.get('period') || '', owner: params.get('owner') || '', open: params.get('open') || '',
    items: [], next: null, searched: false,
  };
  let alive = true;

  const qInput = h('input', { type: 'search', id: 'search-input', value: st.q, placeholder: t('memories.search_placeholder'),
    'aria-label': t('memories.search_placeholder') });
  const agentSel = h('select', { id: 'filter-agent', 'aria-label': t('memories.filter_agent') },
    h('option', { value: '' }, t('memories.all_agents')));
  const projectInput = h('input', { type: 'text', id: 'filter-project', value: st.project, placeholder: t('memories.project_placeholder'),
    size: 18, 'aria-label': t('memories.filter_project') });
  const periodSel = h('select', { id: 'filter-period', 'aria-label': t('memories.filter_time') },
    ...Object.keys(PERIODS).map((k) => h('option', { value: k }, t('period.' + (k || 'any')))));
  periodSel.value = st.period;
  const ownerSel = h('select', { id: 'filter-owner', class: 'hidden', 'aria-label': t('memories.filter_owner') });
  const listBox = h('div', { class: 'list', id: 'memory-list' });
  const status = h('div', { class: 'muted', id: 'list-status' });
  const more = h('button', { class: 'hidden', id: 'load-more', onclick: () => load(true) }, t('memories.load_more'));
  const detail = h('div', { class: 'detail card hidden', id: 'memory-detail' });
  const split = h('div', { class: 'split' }, h('div', {}, status, listBox, h('div', { class: 'block' }, more)), detail);

  const form = h('form', { class: 'search-row', onsubmit: (e) => { e.preventDefault(); st.q = qInput.value.trim(); load(false); } },
    qInput, h('button', { class: 'primary', type: 'submit', id: 'search-button' }, icon('search'), t('memories.search')));
  for (const el of [agentSel, periodSel, ownerSel]) el.addEventListener('change', () => { readFilters(); load(false); });
  projectInput.addEventListener('change', () => { readFilters(); load(false); });

  root.append(
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, t('memories.title')), h('p', {}, t('memories.subtitle')))),
    form,
    h('div', { class: 'filters' }, agentSel, projectInput, periodSel, ownerSel,
      h('button', { class: 'ghost small', type: 'button', onclick: clearFilters }, t('memories.clear_filters'))),
    split);

  function readFilters() {
    st.agent = agentSel.value; st.project = projectInput.value.trim(); st.period = periodSel.value; st.owner = ownerSel.value;
  }

  function clearFilters() {
    agentSel.value = ''; projectInput.value = ''; periodSel.value = ''; qInput.value = ''; st.q = '';
    readFilters(); load(false);
  }

  function saveHash() {
    replaceParams('memories', { q: st.q, agent: st.agent, project: st.project, period: st.period, owner: st.owner, open: st.open });
  }

  async function loadFacets() {
    try {
      const [stats, owners] = await Promise.all([api('/stats' + (st.owner ? `?owner=${encodeURIComponent(st.owner)}` : '')), api('/owners')]);
      for (const [agent, n] of Object.entries(stats.by_agent || {})) agentSel.append(h('option', { value: agent }, `${agent} (${fmtNum(n)})`));
      agentSel.value = st.agent;
      if ((owners.owners || []).length > 1) {
        ownerSel.classList.remove('hidden');
        ownerSel.replaceChildren(...owners.owners.map((o) => h('option', { value: o === owners.default ? '' : o }, o)));
        ownerSel.value = st.owner;
      }
      return stats;
    } catch (e) { return null; }
  }

  function query(extra) {
    const q = new URLSearchParams();
    if (st.agent) q.set('agent', st.agent);
    if (st.project) q.set('project', st.project);
    if (st.owner) q.set('owner', st.owner);
    for (const [k, v] of Object.entries(extra || {})) if (v !== null && v !== undefined) q.set(k, v);
    return q.toString();
  }

  async function load(append) {
    saveHash();
    if (!append) { listBox.replaceChildren(loading()); more.classList.add('hidden'); status.textContent = ''; }
    try {
      let items; let next = null;
      if (st.q) {
        const data = await api('/memories/search?' + query({ q: st.q, k: 30 }));
        items = data.results;
        const since = PERIODS[st.period] ? Date.now() / 1000 - PERIODS[st.period] : null;
        if (since) items = items.filter((r) => (r.ended_at || r.created_at || 0) >= since);  // as the list filters
        status.textContent = t('memories.results', { n: items.length, ms: Math.round(data.took_ms) });
        st.searched = true;
      } else {
        const since = PERIODS[st.period] ? Date.now() / 1000 - PERIODS[st.period] : null;
        const data = await api('/memories?' + query({ limit: 30, offset: append ? st.next : 0, since }));
        items = data.items; next = data.next_offset;
        status.textContent = '';
        st.searched = false;
      }
      if (!alive) return;
      if (!append) { listBox.replaceChildren(); st.items = []; }
      st.items.push(...items);
      st.next = next;
      more.classList.toggle('hidden', next === null || next === undefined || !!st.q);
      for (const it of items) listBox.append(card(it));
      if (!st.items.length) listBox.replaceChildren(await emptyFor());
      if (st.open) openDetail(st.open);
    } catch (e) {
      listBox.replaceChildren(errorBox(e));
    }
  }

  async function emptyFor() {
    if (st.q) {
      return emptyState(t('memories.no_match_title', { q: st.q }), t('memories.no_match_text'),
        h('button', { onclick: clearFilters }, t('memories.clear_filters')));
    }
    if (st.agent || st.project || st.period) {
      return emptyState(t('memories.no_filtered_title'), t('memories.no_filtered_text'),
        h('button', { onclick: clearFilters }, t('memories.clear_filters')));
    }
    return emptyState(t('memories.empty_title'), t('memories.empty_text'),
      h('button', { class: 'primary', onclick: () => navigate('sources') }, t('memories.go_sources')));
  }

  function whyChips(r) {
    const d = r.details || {};
    const chips = [];
    for (const [name, info] of Object.entries(d.channels || {})) {
      chips.push(h('span', { class: 'chip why', title: info.score !== undefined ? `score ${info.score}` : '' },
        t('channel.' + name, {}, name), info.rank ? h('b', {}, ` #${info.rank}`) : null));
    }
    for (const [name, v] of Object.entries(d.boosts || {})) {
      if (typeof v === 'number' && Math.abs(v - 1) < 0.02) continue;  // too small to explain anything
      chips.push(h('span', { class: 'chip', title: String(v) }, v < 1 ? '− ' : '+ ', t('boost.' + name, {}, name)));
    }
    for (const name of Object.keys(d.evidence || {})) {
      chips.push(h('span', { class: 'chip', title: JSON.stringify(d.evidence[name]) }, '+ ', t('evidence.' + name, {}, name)));
    }
    return chips.length ? h('div', { class: 'chips', 'aria-label': t('memories.why') }, h('span', { class: 'faint' }, t('memories.why')), ...chips) : null;
  }

  function card(it) {
    const [head, ...rest] = (it.text || '').split('\n→ ');
    const req = it.request !== undefined ? it.request : head;
    const rep = it.reply !== undefined ? it.reply : rest.join('\n→ ');
    const el = h('div', { class: 'item', tabindex: '0', 'data-id': it.id, role: 'button' },
      h('div', { class: 'meta' }, agentBadge(it.agent), it.project ? h('span', {}, it.project) : null, timeEl(it.started_at || it.created_at),
        it.status && it.status !== 'succeeded' ? statusBadge(it.status) : null,
        it.score !== undefined ? h('span', { class: 'faint' }, `${t('memories.score')} ${it.score.toFixed(4)}`) : null),
      h('div', { class: 'req' }, req),
      rep ? h('div', { class: 'rep' }, rep) : null,
      it.tools && it.tools.length ? h('div', { class: 'chips' }, ...it.tools.slice(0, 6).map((n) => h('span', { class: 'chip mono' }, n)),
        it.actions_count > 6 ? h('span', { class: 'chip' }, `+${it.actions_count - 6}`) : null) : null,
      whyChips(it));
    el.addEventListener('click', () => openDetail(it.id));
    el.addEventListener('keydown', (e) => { if (e.key === 'Enter') openDetail(it.id); });
    return el;
  }

  async function openDetail(id) {
    st.open = id; saveHash();
    for (const el of listBox.querySelectorAll('.item')) el.classList.toggle('selected', el.dataset.id === id);
    split.classList.add('open');
    detail.classList.remove('hidden');
    detail.replaceChildren(loading());
    try {
      const m = await api(`/memories/${encodeURIComponent(id)}` + (st.owner ? `?owner=${encodeURIComponent(st.owner)}` : ''));
      if (!alive || st.open !== id) return;
      detail.replaceChildren(...detailView(m).filter(Boolean)); // the DOM prints a null child as "null"
    } catch (e) {
      detail.replaceChildren(h('div', { class: 'detail-head' }, h('h2', {}, t('memories.detail')), closeBtn()), errorBox(e));
    }
  }

  function closeBtn() {
    return h('button', { class: 'ghost small', 'aria-label': t('common.close'), onclick: closeDetail }, '✕');
  }

  function closeDetail() {
    st.open = ''; saveHash();
    split.classList.remove('open'); detail.classList.add('hidden');
    for (const el of listBox.querySelectorAll('.item')) el.classList.remove('selected');
  }

  function detailView(m) {
    const steps = (m.actions || []).map((a, i) => h('li', { class: a.is_error ? 'step error' : 'step' },
      h('div', {}, h('span', { class: 'faint' }, `${i + 1}. `), h('span', { class: 'tool' }, a.name),
        a.is_error ? h('span', { class: 'badge bad' }, t('memories.tool_error')) : null),
      a.input ? h('pre', { class: 'pre' }, a.input) : null,
      a.output ? h('pre', { class: 'pre out' }, a.output) : null));
    const del = h('button', { class: 'danger', id: 'delete-memory', onclick: () => remove(m) }, t('memories.delete'));
    return [
      h('div', { class: 'detail-head' },
        h('div', {}, h('div', { class: 'meta' }, agentBadge(m.agent), ' ', m.project || t('memories.no_project'), ' · ',
          h('span', { title: absTime(m.started_at) }, absTime(m.started_at || m.created_at))), ' ', statusBadge(m.status)),
        closeBtn()),
      section(t('memories.request'), h('pre', { class: 'pre', id: 'detail-request' }, m.request)),
      steps.length ? section(t('memories.trajectory', { n: steps.length }), h('ol', { class: 'steps' }, ...steps)) : null,
      m.reply ? section(t('memories.reply'), h('pre', { class: 'pre' }, m.reply)) : null,
      section(t('memories.about'), h('dl', { class: 'kv' },
        h('dt', {}, 'ID'), h('dd', { class: 'mono' }, m.id),
        h('dt', {}, t('memories.session')), h('dd', {}, m.session_id
          ? h('a', { href: `#/timeline?session=${encodeURIComponent(m.session_id)}${st.owner ? '&owner=' + encodeURIComponent(st.owner) : ''}` }, m.session_id)
          : '—'),
        h('dt', {}, t('memories.owner')), h('dd', {}, m.owner),
        h('dt', {}, t('memories.model')), h('dd', {}, m.model || '—'),
        h('dt', {}, t('memories.tags')), h('dd', {}, (m.tags || []).join(', ') || '—'),
        h('dt', {}, t('memories.embedding')), h('dd', {}, t('embed.' + m.embed_state, {}, m.embed_state)),
        h('dt', {}, t('memories.source')), h('dd', {}, m.source_name || '—'))),
      h('div', { class: 'block' }, del),
    ];
  }

  async function remove(m) {
    const ok = await confirmDialog({ title: t('memories.delete_title'), body: t('memories.delete_body'), confirm: t('memories.delete'), danger: true });
    if (!ok) return;
    try {
      await api(`/memories/${encodeURIComponent(m.id)}` + (st.owner ? `?owner=${encodeURIComponent(st.owner)}` : ''), { method: 'DELETE' });
      toast(t('memories.deleted'));
      st.items = st.items.filter((x) => x.id !== m.id);
      listBox.querySelector(`.item[data-id="${CSS.escape(m.id)}"]`)?.remove();
      closeDetail();
      if (!st.items.length) listBox.replaceChildren(await emptyFor());
    } catch (e) {
      detail.prepend(errorBox(e));
    }
  }

  loadFacets();
  load(false);
  return () => { alive = false; };
}
