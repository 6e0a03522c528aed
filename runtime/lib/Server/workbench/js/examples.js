// The examples panel: a button.example[data-example=ID] per entry of
// workbench/examples/examples.json; clicking one hands its entry to onPick.
import {el} from "./dom.js";

const BASE = "workbench/examples/";

/// The example's program source.
export async function exampleSource(ex) {
  const r = await fetch(BASE + ex.file);
  if (!r.ok) throw new Error(`${BASE}${ex.file}: HTTP ${r.status}`);
  return r.text();
}

/// Fills the container; a failure to load the list is shown in it.
export async function showExamples(container, onPick) {
  let list;
  try {
    const r = await fetch(`${BASE}examples.json`);
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    list = await r.json();
  } catch (e) {
    container.replaceChildren(el("p", {class: "run-error"}, `examples: ${e.message}`));
    return;
  }
  const about = el("p", {class: "example-description"}, "One click loads an example and runs it.");
  const describe = (ex) => {
    about.textContent = ex.description ?? ex.title ?? ex.id;
  };
  container.replaceChildren(
      el("div", {class: "example-grid"},
         list.map(
             (ex) =>
                 el("button", {
                   type: "button",
                   class: "example",
                   dataset: {example: ex.id},
                   title: ex.description ?? "",
                   onclick: () => {
                     describe(ex);
                     onPick(ex);
                   },
                   onmouseenter: () => describe(ex),
                 },
                    ex.title ?? ex.id))),
      about);
}
