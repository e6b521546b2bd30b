// Small DOM helpers. Data is only ever inserted as text (never innerHTML), so memory text
// cannot inject markup into the viewer.
import { t, lang } from './i18n.js';

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const ICONS = {
  memories: 'M4 5h16M4 12h16M4 19h10',
  timeline: 'M12 8v4l3 2M21 12a9 9 0 1 1-18 0 9 9 0 0 1 18 0z',
  learned: 'M12 3l2.6 5.3 5.9.9-4.3 4.1 1 5.8L12 16.4 6.8 19.1l1-5.8-4.3-4.1 5.9-.9z',
  integrations: 'M8 12h8M12 8v8M5 5h4v4H5zM15 5h4v4h-4zM5 15h4v4H5zM15 15h4v4h-4z',
  sources: 'M4 7c0-1.7 3.6-3 8-3s8 1.3 8 3-3.6 3-8 3-8-1.3-8-3zm0 0v10c0 1.7 3.6 3 8 3s8-1.3 8-3V7M4 12c0 1.7 3.6 3 8 3s8-1.3 8-3',
  settings: 'M12 15a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM19.4 15a1.7 1.7 0 0 0 .3 1.8l.1.1a2 2 0 1 1-2.8 2.8l-.1-.1a1.7 1.7 0 0 0-1.8-.3 1.7 1.7 0 0 0-1 1.5V21a2 2 0 1 1-4 0v-.1a1.7 1.7 0 0 0-1.1-1.5 1.7 1.7 0 0 0-1.8.3l-.1.1a2 2 0 1 1-2.8-2.8l.1-.1a1.7 1.7 0 0 0 .3-1.8 1.7 1.7 0 0 0-1.5-1H3a2 2 0 1 1 0-4h.1a1.7 1.7 0 0 0 1.5-1.1 1.7 1.7 0 0 0-.3-1.8l-.1-.1a2 2 0 1 1 2.8-2.8l.1.1a1.7 1.7 0 0 0 1.8.3H9a1.7 1.7 0 0 0 1-1.5V3a2 2 0 1 1 4 0v.1a1.7 1.7 0 0 0 1 1.5 1.7 1.7 0 0 0 1.8-.3l.1-.1a2 2 0 1 1 2.8 2.8l-.1.1a1.7 1.7 0 0 0-.3 1.8V9a1.7 1.7 0 0 0 1.5 1H21a2 2 0 1 1 0 4h-.1a1.7 1.7 0 0 0-1.5 1z',
  health: 'M3 12h4l3-8 4 16 3-8h4',
  search: 'M21 21l-4.3-4.3M11 18a7 7 0 1 1 0-14 7 7 0 0 1 0 14z',
};

export function icon(name) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('fill', 'none');
  svg.setAttribute('stroke', 'currentColor');
  svg.setAttribute('stroke-width', '1.8');
  svg.setAttribute('stroke-linecap', 'round');
  svg.setAttribute('stroke-linejoin', 'round');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', ICONS[name] || '');
  svg.append(p);
  return svg;
}

export function relTime(ts) {
  if (!ts) return '—';
  const diff = ts * 1000 - Date.now();
  const abs = Math.abs(diff) / 1000;
  const rtf = new Intl.RelativeTimeFormat(lang(), { numeric: 'auto' });
  const units = [['year', 31536000], ['month', 2592000], ['week', 604800], ['day', 86400], ['hour', 3600], ['minute', 60]];
  for (const [unit, secs] of units) {
    if (abs >= secs) return rtf.format(Math.round(diff / 1000 / secs), unit);
  }
  return t('time.just_now');
}

export function absTime(ts) {
  if (!ts) return '';
  return new Date(ts * 1000).toLocaleString(lang());
}

export function timeEl(ts) {
  return h('span', { title: absTime(ts) }, relTime(ts));
}

export function fmtNum(n) {
  return typeof n === 'number' ? n.toLocaleString(lang()) : (n ?? '—');
}

export function fmtBytes(n) {
  if (typeof n !== 'number') return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(n >= 10 || i === 0 ? 0 : 1)} ${units[i]}`;
}

export function agentBadge(agent) {
  return h('span', { class: 'badge agent' }, agent || '?');
}

export function statusBadge(status) {
  const cls = { succeeded: 'ok', done: 'ok', failed: 'bad', cancelled: 'warn', stopped: 'warn', paused: 'warn',
    running: '', queued: '' }[status] ?? '';
  return h('span', { class: `badge ${cls}` }, t(`status.${status}`, {}, status));
}

export function emptyState(title, text, ...actions) {
  return h('div', { class: 'empty' }, h('div', { class: 'big' }, title), text ? h('p', {}, text) : null,
    actions.length ? h('div', {}, ...actions) : null);
}

export function errorBox(err) {
  const msg = err && err.status === 0 ? t('error.offline') : (err && err.message) || String(err);
  return h('div', { class: 'error-box', role: 'alert' }, msg);
}

export function loading() {
  return h('div', { class: 'loading' }, h('span', { class: 'spinner' }), ' ', t('common.loading'));
}

export function progressBar(fraction, status) {
  const bar = h('div', {});
  const wrap = h('div', { class: 'progress', role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': '100' }, bar);
  setProgress(wrap, fraction, status);
  return wrap;
}

export function setProgress(wrap, fraction, status) {
  const bar = wrap.firstChild;
  wrap.classList.toggle('indeterminate', (fraction === null || fraction === undefined) && status !== 'done');
  wrap.classList.toggle('done', status === 'done');
  wrap.classList.toggle('paused', status === 'paused');
  const pct = status === 'done' ? 100 : Math.round((fraction || 0) * 100);
  if (fraction !== null && fraction !== undefined || status === 'done') bar.style.width = pct + '%';
  else bar.style.width = '';
  wrap.setAttribute('aria-valuenow', String(pct));
  wrap.dataset.pct = String(pct);
  wrap.dataset.status = status || '';
}

export function toast(message, bad = false) {
  let box = document.querySelector('.toasts');
  if (!box) { box = h('div', { class: 'toasts', 'aria-live': 'polite' }); document.body.append(box); }
  const el = h('div', { class: bad ? 'toast bad' : 'toast' }, message);
  box.append(el);
  setTimeout(() => el.remove(), 4200);
}

// A confirmation dialog. `body` may be a string or a node; `danger` colours the confirm button.
// With `typeWord`, the confirm button stays disabled until that word is typed.
export function confirmDialog({ title, body, confirm, danger = false, typeWord = null }) {
  return new Promise((resolve) => {
    const input = typeWord ? h('input', { type: 'text', 'aria-label': t('common.type_to_confirm', { word: typeWord }),
      placeholder: typeWord }) : null;
    const ok = h('button', { class: danger ? 'danger solid' : 'primary', disabled: !!typeWord }, confirm || t('common.confirm'));
    const cancel = h('button', {}, t('common.cancel'));
    const back = h('div', { class: 'modal-back' },
      h('div', { class: 'modal', role: 'dialog', 'aria-modal': 'true' },
        h('h2', {}, title), typeof body === 'string' ? h('p', { class: 'muted' }, body) : body,
        typeWord ? h('p', { class: 'muted' }, t('common.type_to_confirm', { word: typeWord })) : null, input,
        h('div', { class: 'actions' }, cancel, ok)));
    const close = (v) => { back.remove(); document.removeEventListener('keydown', onKey); resolve(v); };
    const onKey = (e) => { if (e.key === 'Escape') close(false); };
    if (input) input.addEventListener('input', () => { ok.disabled = input.value.trim() !== typeWord; });
    ok.addEventListener('click', () => close(input ? input.value.trim() === typeWord : true));
    cancel.addEventListener('click', () => close(false));
    back.addEventListener('click', (e) => { if (e.target === back) close(false); });
    document.addEventListener('keydown', onKey);
    document.body.append(back);
    (input || ok).focus();
  });
}

export function section(title, ...children) {
  return h('div', { class: 'block' }, h('h3', {}, title), ...children);
}

export function pageHead(title, subtitle, ...actions) {
  return h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, title), subtitle ? h('p', {}, subtitle) : null),
    actions.length ? h('div', { class: 'filters', style: null }, ...actions) : null);
}
