// One request of a run: the completion with the program (and, when asked, the same prompt
// without it, in parallel), its saves decoded whether they came inline or behind a handle.
import {apiGetBytes, apiPost} from "./api.js";
import {decodeSave, parseSafetensors} from "./formats.js";

/// prompt: a string, or [{invoke, text}]. Resolves to {response, saves: Map, plain, plainError};
/// rejects with the program request's ApiError.
export async function runRequest(
    {model, prompt, program, params, trace, maxTokens, temperature, comparePlain}) {
  const texts = typeof prompt === "string" ? prompt : prompt.map((p) => p.text);
  const body = {
    model,
    prompt: texts,
    max_tokens: maxTokens,
    temperature,
    return_token_ids: true,
    nns: {program, params, saves_format: "json"},
  };
  if (trace) body.nns.trace = trace;
  const withProgram = apiPost("v1/completions", body);
  const without = comparePlain ? apiPost("v1/completions", {
                                   model,
                                   prompt: typeof texts === "string" ? texts : texts.at(-1),
                                   max_tokens: maxTokens,
                                   temperature,
                                   return_token_ids: true,
                                 }).then((r) => ({r}), (e) => ({e})) :
                                 Promise.resolve({r: null});
  const response = await withProgram;
  const saves = await responseSaves(response);
  const plain = await without;
  return {response, saves, plain: plain.r ?? null, plainError: plain.e ?? null};
}

async function responseSaves(response) {
  const nns = response.nns ?? {};
  if (nns.saves_handle) return parseSafetensors(await apiGetBytes(nns.saves_handle.url));
  const saves = new Map();
  for (const [name, save] of Object.entries(nns.saves ?? {})) saves.set(name, decodeSave(save));
  return saves;
}
