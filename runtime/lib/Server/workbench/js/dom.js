// DOM building. Text always goes in as text nodes, so token text such as "<" or "&" needs no
// escaping; escapeHtml is for the one place that builds markup (the editor's overlay).

/// el("div", {class: "x", dataset: {name: "h"}, onclick: f}, child, "text", [more children])
export function el(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

const SVG_NS = "http://www.w3.org/2000/svg";

export function svgEl(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

function build(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "dataset")
      Object.assign(node.dataset, value);
    else if (key.startsWith("on"))
      node.addEventListener(key.slice(2), value);
    else if (key === "text")
      node.textContent = value;
    else
      node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child))
      append(node, child);
    else
      node.append(child instanceof Node ? child : String(child));
  }
}

export function escapeHtml(text) {
  return text.replace(
      /[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;"})[c]);
}

/// A number in a few significant digits.
export function fmt(x) {
  if (!Number.isFinite(x)) return String(x);
  if (Number.isInteger(x) && Math.abs(x) < 1e9) return String(x);
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return x.toExponential(3);
  return x.toPrecision(4).replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
}
