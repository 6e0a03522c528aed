// Token ids -> their text (detokenize with return_tokens, each id's own text), cached for the
// page's lifetime, and drawn with visible whitespace.
import {apiPost} from "./api.js";
import {el} from "./dom.js";

const texts = new Map();
const CHUNK = 8192;

/// Fetches the text of the ids not known yet; ids outside [0, vocab) are left out. A failure
/// leaves those ids shown by number.
export async function loadTokens(ids, vocab) {
  const missing = [...new Set(ids)].filter(
      (id) => Number.isInteger(id) && id >= 0 && id < vocab && !texts.has(id));
  for (let i = 0; i < missing.length; i += CHUNK) {
    const chunk = missing.slice(i, i + CHUNK);
    try {
      const r = await apiPost(
          "v1/nns/detokenize", {ids: chunk, skip_special_tokens: false, return_tokens: true});
      if (!Array.isArray(r.tokens)) return;
      chunk.forEach((id, k) => texts.set(id, r.tokens[k]));
    } catch {
      return;
    }
  }
}

/// The token's text, or undefined when it is not known.
export function tokenText(id) {
  return texts.get(id);
}

const WHITESPACE = {
  " ": "·",
  "\n": "↵",
  "\t": "→",
  "\r": "␍"
};

/// The token's text as nodes, whitespace shown by a dimmed sign (span.ws); an unknown id as
/// "#id".
export function tokenNodes(id) {
  const text = texts.get(id);
  if (text === undefined) return [el("span", {class: "unknown-token"}, `#${id}`)];
  if (text === "") return [el("span", {class: "ws"}, "∅")];
  const out = [];
  for (const part of text.split(/([ \n\t\r]+)/)) {
    if (!part) continue;
    if (WHITESPACE[part[0]] !== undefined)
      out.push(el("span", {class: "ws"}, [...part].map((c) => WHITESPACE[c]).join("")));
    else
      out.push(part);
  }
  return out;
}

/// The token's text with whitespace signs, as one string (for SVG labels); "#id" when unknown.
export function visibleText(id) {
  const text = texts.get(id);
  if (text === undefined) return `#${id}`;
  return text === "" ? "∅" : text.replace(/[ \n\t\r]/g, (c) => WHITESPACE[c]);
}

/// "id 7042 ' Paris'": for titles.
export function tokenTitle(id) {
  const text = texts.get(id);
  return text === undefined ? `id ${id}` : `id ${id} ${JSON.stringify(text)}`;
}

/// A span.token with the id in data-token-id.
export function tokenSpan(id, cls = "") {
  return el(
      "span", {class: `token ${cls}`.trim(), dataset: {tokenId: id}, title: tokenTitle(id)},
      tokenNodes(id));
}
