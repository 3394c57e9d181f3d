// dom.js: tiny helpers to build DOM nodes without innerHTML (server
// strings are always text, never markup) and to format numbers.

/** h("div", {class: "x", "data-testid": "y"}, child, "text", ...) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") el.textContent = v;
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export const $ = (id) => document.getElementById(id);

/**
 * A horizontal bar (role=meter) filled to value/max, with an optional mark
 * (a threshold). tone: "pass" or "fail" colours it as a verdict; without
 * it the colour says how full it is (load).
 */
export function bar(value, max, label, mark, tone) {
  const pct = max > 0 ? Math.min(100, Math.max(0, (value / max) * 100)) : 0;
  const fill = h("span", { class: "bar-fill" });
  fill.style.setProperty("width", pct.toFixed(1) + "%");
  const el = h("span", {
    class: "bar", role: "meter", "aria-label": label,
    "aria-valuemin": 0, "aria-valuemax": max, "aria-valuenow": value,
  }, fill);
  if (tone) el.classList.add("tone-" + tone);
  else if (pct >= 90) el.classList.add("hot");
  else if (pct >= 60) el.classList.add("warm");
  if (mark !== undefined && max > 0) {
    const m = h("span", { class: "bar-mark", title: "threshold" });
    m.style.setProperty("left", Math.min(100, (mark / max) * 100).toFixed(1) + "%");
    el.append(m);
  }
  return el;
}

export function ms(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "—";
  return v < 1000 ? `${Math.round(v)} ms` : `${(v / 1000).toFixed(2)} s`;
}

export function secs(s) {
  if (!Number.isFinite(s)) return "—";
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86400) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86400).toFixed(1)} d`;
}

/** The cache badge text: HIT exact / HIT semantic 0.953 / MISS / BYPASS. */
export function cacheLabel(c) {
  if (!c || !c.status) return "—";
  switch (c.status) {
    case "hit":
      return c.kind === "semantic" && typeof c.score === "number"
        ? `HIT semantic ${c.score.toFixed(3)}` : `HIT ${c.kind || ""}`.trim();
    case "bypass": return "BYPASS";
    default: return "MISS";
  }
}
