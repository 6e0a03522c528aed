// The sites browser: the model's summary and its hook sites in firing order, filtered by the
// words typed; clicking a site inserts its path (without the leading "model.") at the
// editor's cursor.
import {el} from "./dom.js";

const SUMMARY = [
  ["layers", "layers"],
  ["hidden", "hidden"],
  ["heads", "heads"],
  ["kv_heads", "kv heads"],
  ["head_dim", "head dim"],
  ["intermediate", "intermediate"],
  ["vocab", "vocab"],
];

/// Fills #model-info and #sites from /v1/nns/sites' answer.
export function showSites({info, summaryBox, list, filter, onInsert}) {
  summaryBox.replaceChildren(
      el("div", {class: "model-summary-name"}, info.model),
      el("dl", {},
         SUMMARY.filter(([key]) => info[key] !== undefined)
             .map(
                 ([key, label]) =>
                     [el("dt", {}, label),
                      el("dd", {dataset: {dim: key}}, String(info[key])),
  ])),
  );
  list.replaceChildren(...info.sites.map((site) => {
    const path = site.path.startsWith("model.") ? site.path.slice("model.".length) : site.path;
    const shape = `[${site.shape.join(", ")}] ${site.dtype}`;
    return el(
        "li", {
          class: site.writable ? "site" : "site read-only",
          dataset: {path, search: path.toLowerCase()},
          title: `insert '${path}' at the cursor`,
          onclick: () => onInsert(path),
        },
        el("span", {class: "site-path"},
           path.split(".").flatMap((part, i) => (i ? [".", el("wbr"), part] : [part]))),
        el("span", {class: "site-shape"}, shape),
        site.writable ? null : el("span", {class: "site-ro"}, "read-only"));
  }));
  const apply = () => {
    // A number matches a whole path component ("12" finds layers.12, not layers.120).
    const tests = filter.value.toLowerCase().split(/\s+/).filter((w) => w).map(
        (w) => /^\d+$/.test(w) ? (p) => p.split(".").includes(w) : (p) => p.includes(w));
    for (const li of list.children) li.hidden = !tests.every((test) => test(li.dataset.search));
  };
  filter.oninput = apply;
  apply();
}
