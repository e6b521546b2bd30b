// Hash navigation shared by the pages (kept apart from app.js to avoid an import cycle).

function hashFor(name, params) {
  const q = new URLSearchParams(Object.entries(params || {}).filter(([, v]) => v !== '' && v !== null && v !== undefined));
  const s = q.toString();
  return `#/${name}${s ? '?' + s : ''}`;
}

export function navigate(name, params = {}) {
  location.hash = hashFor(name, params);
}

// Update the hash without re-rendering the page (filters, selection).
export function replaceParams(name, params) {
  history.replaceState(null, '', hashFor(name, params));
}
