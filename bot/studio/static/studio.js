// threadwise studio: plain JavaScript, no build step, no outside resources.
// Every piece of message text reaches the page through text nodes (el() and textContent),
// never through HTML parsing, so nothing a Discord user wrote can become markup or script.
"use strict";

const KINDS = ["reference", "reply", "link", "mention", "author", "temporal", "linear"];
const SVG_NS = "http://www.w3.org/2000/svg";

const state = {
  channel: null, // ChannelInfo from /api/channel
  byId: new Map(), // message id -> timeline message
  order: new Map(), // message id -> index in the log
  rows: new Map(), // message id -> timeline row element
  marked: [], // rows currently decorated for the selected context
  trigger: null,
  view: null, // the latest ContextView
  configScores: {}, // whole-log score at the config's own values, cold and warm, to compare against
  request: 0, // increments per refresh, so a late answer never overwrites a newer one
  timer: null,
  renderedThreshold: null,
  storeOldest: null,
  storeTokens: { prompt: 0, cached: 0 },  // summed over the answers shown
  follow: null, // the latest FollowView: what the bot would answer without being called
  followRequest: 0,
};

// ---------------------------------------------------------------- helpers

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function $(id) {
  return document.getElementById(id);
}

function setStatus(text) {
  $("status").textContent = text;
}

async function api(path, body) {
  const options = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  };
  const response = await fetch(path, options);
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
  return data;
}

function hhmm(iso) {
  return iso.slice(11, 16);
}

function day(iso) {
  return iso.slice(0, 10);
}

function authorColor(id) {
  // Ids of one server's members often differ in their last digits only: spread them round the
  // colour wheel by the golden angle so that neighbours get distinct hues.
  let hash = 0;
  for (const ch of id) hash = (hash * 31 + ch.charCodeAt(0)) % 1000003;
  return `hsl(${Math.round((hash * 137.508) % 360)} 60% 36%)`;
}

function clip(text, length) {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > length ? flat.slice(0, length - 1) + "…" : flat;
}

function fmt(value) {
  return value === null || value === undefined ? "–" : value.toFixed(3);
}

function setUrl(params) {
  const url = new URL(window.location.href);
  for (const [key, value] of Object.entries(params)) {
    if (value === null) url.searchParams.delete(key);
    else url.searchParams.set(key, value);
  }
  history.replaceState(null, "", url.pathname + url.search);
}

// ---------------------------------------------------------------- start

async function start() {
  const info = await api("/api/info");
  const params = new URLSearchParams(window.location.search);
  $("tab-channel").hidden = !info.channel;
  $("tab-store").hidden = !info.store;
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => show(button.dataset.view));
  }
  const wanted = params.get("view") || (info.channel ? "channel" : "store");
  show(wanted === "store" && info.store ? "store" : info.channel ? "channel" : "store");
  if (info.store && params.get("interaction")) showInteraction(params.get("interaction"));
  if (info.channel) await loadChannel(params.get("trigger"));
}

function show(view) {
  if (view === "channel" && !$("channel-view").hidden) return;
  $("channel-view").hidden = view !== "channel";
  $("store-view").hidden = view !== "store";
  $("tab-channel").classList.toggle("active", view === "channel");
  $("tab-store").classList.toggle("active", view === "store");
  setUrl({ view: view === "channel" ? null : view });
  if (view === "store" && state.storeOldest === null) loadStore();
  if (view === "channel" && state.trigger) state.rows.get(state.trigger)?.scrollIntoView({ block: "center" });
}

// ---------------------------------------------------------------- channel view

// Which settings the channel answers with: its [[channels]] table or the top level (text only).
function showApplies(applies) {
  const node = $("applies");
  node.hidden = !applies;
  if (!applies) return;
  node.textContent = applies.summary;
  node.title = [applies.summary, ...applies.changes].join("\n");
}

async function loadChannel(wantedTrigger) {
  setStatus("loading the log…");
  const channel = await api("/api/channel");
  state.channel = channel;
  channel.messages.forEach((message, index) => {
    state.byId.set(message.id, message);
    state.order.set(message.id, index);
  });
  $("source-name").textContent = `${channel.guild} › #${channel.channel} · ${channel.path}`;
  showApplies(channel.applies);
  $("no-gold").hidden = channel.has_gold;
  $("score-table").hidden = !channel.has_gold;
  buildControls(channel.fields, channel.settings);
  renderLegend();
  renderTimeline();
  setupFollow();
  const trigger = wantedTrigger && state.byId.has(wantedTrigger) ? wantedTrigger
    : channel.default_trigger;
  if (wantedTrigger && !state.byId.has(wantedTrigger)) {
    setStatus(`message ${wantedTrigger} is not in this log; showing ${trigger}`);
  }
  if (trigger) await selectTrigger(trigger, true);
}

function buildControls(fields, values) {
  const form = $("settings");
  form.replaceChildren();
  for (const field of fields) {
    const input = el("input", { id: `set-${field.key}`, name: field.key });
    input.dataset.kind = field.kind;
    input.dataset.nullable = String(field.nullable);
    const value = values[field.key];
    if (field.kind === "bool") {
      input.type = "checkbox";
      input.checked = Boolean(value);
    } else {
      input.type = field.kind === "text" ? "text" : "number";
      if (field.kind === "int") input.step = "1";
      if (field.kind === "float") input.step = "any";
      if (field.minimum !== null) input.min = String(field.minimum);
      if (field.maximum !== null) input.max = String(field.maximum);
      input.value = value === null ? "" : String(value);
      if (field.nullable) input.placeholder = "unset";
    }
    input.dataset.config = field.kind === "bool" ? String(Boolean(value)) : input.value;
    input.addEventListener("input", () => {
      markChanged(input);
      scheduleRefresh();
    });
    // The key's meaning shows below the list while its control has the focus (and stays, so
    // that nothing moves under the pointer).
    input.addEventListener("focus", () => {
      $("field-help").textContent = `${field.key}: ${field.description}`;
    });
    form.append(el("div", { class: "field", title: field.description },
      el("label", { for: input.id }, el("code", { text: field.key }), input)));
  }
  $("defaults").addEventListener("click", () => {
    for (const input of form.querySelectorAll("input")) {
      if (input.type === "checkbox") input.checked = input.dataset.config === "true";
      else input.value = input.dataset.config;
      markChanged(input);
    }
    scheduleRefresh();
  });
  $("copy-toml").addEventListener("click", copyToml);
  $("warm").addEventListener("change", scheduleRefresh);
}

function markChanged(input) {
  const now = input.type === "checkbox" ? String(input.checked) : input.value;
  input.classList.toggle("changed", now !== input.dataset.config);
}

// The controls' values, or with ``fromConfig`` the config's own (what green/red compare with).
function readSettings(fromConfig = false) {
  const settings = {};
  for (const input of $("settings").querySelectorAll("input")) {
    const value = fromConfig ? input.dataset.config : input.value;
    if (input.type === "checkbox") settings[input.name] = fromConfig ? value === "true" : input.checked;
    else if (value === "") settings[input.name] = input.dataset.nullable === "true" ? null : "";
    else if (input.dataset.kind === "text") settings[input.name] = value;
    else settings[input.name] = Number(value);
  }
  return settings;
}

function scheduleRefresh() {
  clearTimeout(state.timer);
  state.timer = setTimeout(refresh, 120);
}

async function selectTrigger(id, scroll) {
  state.trigger = id;
  setUrl({ trigger: id });
  await refresh();
  if (scroll) state.rows.get(id)?.scrollIntoView({ block: "center" });
}

async function refresh() {
  if (!state.trigger) return;
  const request = ++state.request;
  const settings = readSettings();
  const warm = $("warm").checked;
  setStatus("building…");
  try {
    const [view, score] = await Promise.all([
      api("/api/context", { trigger: state.trigger, settings, warm }),
      state.channel.has_gold ? api("/api/score", { settings, warm }) : Promise.resolve({ score: null }),
    ]);
    if (request !== state.request) return;
    $("settings-error").hidden = true;
    if (state.channel.has_gold && !(warm in state.configScores)) {
      // The config's own score with this cache, once: the first with a box ticked may come
      // after the settings were changed.
      const own = await api("/api/score", { settings: readSettings(true), warm });
      state.configScores[warm] = own.score;
      if (request !== state.request) return;
    }
    if (settings.time_threshold_minutes !== state.renderedThreshold) renderTimeline();
    state.view = view;
    applyView(view);
    renderScores(view.score, score.score, warm);
    setStatus(`${view.context.length} messages · prompt ≈${view.tokens} tokens`);
  } catch (error) {
    if (request !== state.request) return;
    $("settings-error").textContent = error.message;
    $("settings-error").hidden = false;
    setStatus("settings refused");
  }
}

function copyToml() {
  const text = $("toml").textContent;
  const done = () => setStatus("[context] copied as TOML");
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, () => selectToml());
  } else {
    selectToml();
  }
}

function selectToml() {
  const range = document.createRange();
  range.selectNodeContents($("toml"));
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  setStatus("TOML selected: press Ctrl+C");
}

// ---------------------------------------------------------------- timeline

function renderTimeline() {
  const container = $("timeline");
  const thresholdInput = $("set-time_threshold_minutes");
  const minutes = thresholdInput ? Number(thresholdInput.value) : NaN;
  state.renderedThreshold = minutes;
  const gapMs = Number.isFinite(minutes) && minutes > 0 ? minutes * 60000 : Infinity;
  const fragment = document.createDocumentFragment();
  let previous = null;
  let breaks = 0;
  for (const message of state.channel.messages) {
    if (previous === null || day(previous.time) !== day(message.time)) {
      fragment.append(el("div", { class: "break", text: day(message.time) }));
    } else if (message.ms - previous.ms > gapMs) {
      breaks += 1;
      const silence = Math.round((message.ms - previous.ms) / 60000);
      fragment.append(el("div", { class: "break", text: `${silence} min of silence` }));
    }
    fragment.append(timelineRow(message));
    previous = message;
  }
  state.marked = [];
  container.replaceChildren(fragment);
  applyFollow();
  $("timeline-note").textContent =
    `${state.channel.messages.length} messages · ${breaks} silences over ${minutes} min`;
  if (state.view) applyView(state.view);
}

function timelineRow(message) {
  const author = el("span", { class: "author", title: `${message.author} (${message.author_id})` },
    message.author);
  author.style.color = authorColor(message.author_id);
  const text = el("span", { class: "text" });
  if (message.reply_to) {
    const parent = state.byId.get(message.reply_to);
    text.append(el("span", { class: "replyto" },
      parent ? `↪ ${parent.author}: ${clip(parent.content, 60)}` : "↪ a message not in this log"));
  }
  text.append(message.content);
  text.append(el("span", { class: "badges" }));
  text.append(el("span", { class: "follows" })); // [triggers] follow marks (applyFollow)
  const row = el("div", {
    class: "msg", "data-id": message.id, title: `${message.time} · id ${message.id}`,
    tabindex: "0", onclick: () => selectTrigger(message.id, false),
    onkeydown: (event) => { if (event.key === "Enter") selectTrigger(message.id, false); },
  }, el("span", { class: "time", text: hhmm(message.time) }), author, text);
  state.rows.set(message.id, row);
  return row;
}

// ---------------------------------------------------------------- following

function setupFollow() {
  const select = $("follow-bot");
  const counts = new Map();
  let logBot = null;
  for (const message of state.channel.messages) {
    counts.set(message.author_id, (counts.get(message.author_id) || 0) + 1);
    if (message.bot && logBot === null) logBot = message.author_id;
  }
  const authors = [...counts.keys()].sort((a, b) => counts.get(b) - counts.get(a));
  select.replaceChildren(...authors.map((id) =>
    el("option", { value: id, text: `${state.channel.messages.find((m) => m.author_id === id).author} (${counts.get(id)})` })));
  select.value = logBot || authors[0] || "";
  select.addEventListener("change", loadFollow);
  $("follow-threshold").addEventListener("change", loadFollow);
  loadFollow();
}

async function loadFollow() {
  const request = ++state.followRequest;
  const text = $("follow-threshold").value.trim();
  const body = { bot: $("follow-bot").value || null, threshold: text === "" ? null : Number(text) };
  try {
    const view = await api("/api/follow", body);
    if (request !== state.followRequest) return;
    state.follow = view;
    if (text === "") $("follow-threshold").placeholder = view.threshold.toFixed(2);
    const followed = view.marks.filter((mark) => mark.followed && mark.answer).length;
    $("follow-note").textContent = view.bot_id === null ? "that author wrote nothing here"
      : `${followed} follow-ups answered without a call at ${view.threshold.toFixed(2)} ` +
        `(fitted: ${view.fitted_threshold.toFixed(2)})`;
    applyFollow();
  } catch (error) {
    $("follow-note").textContent = `error: ${error.message}`;
  }
}

function applyFollow() {
  for (const marks of document.querySelectorAll("#timeline .follows")) marks.replaceChildren();
  if (!state.follow) return;
  for (const mark of state.follow.marks) {
    if (mark.score === null) continue; // the rules decided: nothing to tune
    const row = state.rows.get(mark.id);
    if (!row) continue;
    const label = mark.answer ? `would answer · ${mark.score.toFixed(2)}` : mark.score.toFixed(2);
    row.querySelector(".follows").append(
      el("span", { class: `follow ${mark.answer ? "yes" : "no"}`, title: mark.why, text: label }));
  }
}

function reasonLabel(reason) {
  const score = reason.score === null || reason.score === undefined ? "" : ` · ${reason.score.toFixed(2)}`;
  if (reason.via === null) return reason.kind + score;
  const via = state.byId.get(reason.via);
  return (via ? `${reason.kind} via ${via.author} ${hhmm(via.time)}` : `${reason.kind} via ${reason.via}`) + score;
}

function reasonBadge(reason) {
  const badge = el("span", { class: `badge k-${reason.kind}`, text: reasonLabel(reason) });
  if (reason.evidence && reason.evidence.length) {
    badge.title = `relevance score ${reason.score.toFixed(2)}: ${reason.evidence.join(", ")}`;
  }
  return badge;
}

function applyView(view) {
  for (const row of state.marked) {
    row.classList.remove("chosen", "missed", "wrong", "trigger");
    row.querySelector(".badges").replaceChildren();
  }
  state.marked = [];
  const mark = (id, ...classes) => {
    const row = state.rows.get(id);
    if (!row) return null;
    row.classList.add(...classes);
    state.marked.push(row);
    return row;
  };
  mark(view.trigger, "trigger");
  for (const item of view.context) {
    const row = mark(item.id, "chosen", ...(item.in_gold === false ? ["wrong"] : []));
    if (!row) continue;
    const badges = row.querySelector(".badges");
    for (const reason of item.reasons) {
      badges.append(reasonBadge(reason));
    }
    if (item.cuts.length) badges.append(el("span", { class: "badge cut", text: "cut by the budget" }));
  }
  for (const id of view.score ? view.score.missed : []) {
    const row = mark(id, "missed");
    if (row) row.querySelector(".badges").append(el("span", { class: "badge gold", text: "gold, not chosen" }));
  }
  renderDetail(view);
}

// ---------------------------------------------------------------- detail: graph and list

function renderLegend() {
  const legend = $("legend");
  legend.replaceChildren();
  for (const kind of KINDS) {
    legend.append(el("span", {}, el("span", { class: `swatch sw-${kind}` }), kind));
  }
}

function renderDetail(view) {
  const trigger = state.byId.get(view.trigger);
  $("detail-title").textContent = `Context of ${trigger.author} at ${trigger.time.slice(0, 16).replace("T", " ")}`;
  $("detail-summary").textContent =
    `${view.context.length} messages chosen · token budget: ${view.budget} ` +
    `(system prompt ${view.system_tokens}, trigger ${view.trigger_tokens}` +
    (view.label_tokens ? `, label of the other recent messages ${view.label_tokens}` : "") +
    `; linked articles ` +
    `not read here) · ${view.rest_calls} REST call${view.rest_calls === 1 ? "" : "s"} ` +
    `with a ${view.warm ? "warm" : "cold"} cache`;
  $("problems").replaceChildren(...view.problems.map((problem) => el("li", { text: problem })));
  $("toml").textContent = view.toml;
  renderGraph(view);
  renderChosen(view);
}

function renderGraph(view) {
  const graph = $("graph");
  const missed = view.score ? view.score.missed : [];
  const ids = [...view.context.map((item) => item.id), view.trigger, ...missed]
    .filter((id) => state.byId.has(id))
    .sort((a, b) => state.order.get(a) - state.order.get(b));
  const reasons = new Map(view.context.map((item) => [item.id, item.reasons]));
  const missedSet = new Set(missed);
  const rowHeight = 20;
  const arcRoom = Math.min(170, 30 + ids.length * 6);
  const x = arcRoom + 8;
  const y = new Map(ids.map((id, index) => [id, 14 + index * rowHeight]));
  const width = Math.max(graph.parentElement.clientWidth - 28, 300);
  graph.replaceChildren();
  graph.setAttribute("width", width);
  graph.setAttribute("height", 14 + ids.length * rowHeight);
  for (const edge of view.edges) {
    if (!y.has(edge.source) || !y.has(edge.target)) continue;
    const y1 = y.get(edge.source);
    const y2 = y.get(edge.target);
    const bend = Math.min(arcRoom, 10 + Math.abs(y2 - y1) * 0.45);
    const path = svg("path", {
      d: `M ${x} ${y1} C ${x - bend} ${y1}, ${x - bend} ${y2}, ${x} ${y2}`,
      class: `e-${edge.kind}`,
    });
    const from = state.byId.get(edge.source);
    const to = state.byId.get(edge.target);
    path.append(svg("title", {}, `${edge.kind}: ${from.author} ${hhmm(from.time)} → ${to.author} ${hhmm(to.time)}`));
    graph.append(path);
  }
  for (const id of ids) {
    const message = state.byId.get(id);
    const top = y.get(id);
    const kinds = reasons.get(id) || [];
    const kind = kinds.length ? kinds[0].kind : null;
    const dot = svg("circle", { cx: x, cy: top, r: id === view.trigger ? 6 : 4.5 });
    if (id === view.trigger) {
      dot.setAttribute("fill", "#1f2328");
      dot.setAttribute("stroke", "#1f2328");
    } else if (missedSet.has(id)) {
      dot.setAttribute("fill", "#fff");
      dot.setAttribute("stroke", "#f97316");
      dot.setAttribute("stroke-dasharray", "2 2");
    } else {
      const color = getComputedStyle(document.documentElement).getPropertyValue(`--${kind}`).trim();
      dot.setAttribute("fill", kind === "linear" ? "#fff" : color);
      dot.setAttribute("stroke", color);
    }
    dot.append(svg("title", {}, missedSet.has(id) ? "in the gold context, not chosen"
      : (kinds.map(reasonLabel).join("; ") || "trigger")));
    const go = () => flashRow(id);
    dot.addEventListener("click", go);
    const when = svg("text", { x: x + 12, y: top + 4, class: "when" }, hhmm(message.time));
    const label = svg("text", { x: x + 50, y: top + 4 },
      `${message.author}: ${clip(message.content, 70)}`);
    label.addEventListener("click", go);
    graph.append(dot, when, label);
  }
}

function flashRow(id) {
  const row = state.rows.get(id);
  if (!row) return;
  row.scrollIntoView({ block: "center", behavior: "smooth" });
  row.classList.add("flash");
  setTimeout(() => row.classList.remove("flash"), 1200);
}

function renderChosen(view) {
  const list = $("chosen");
  list.replaceChildren();
  for (const item of view.context) {
    const message = state.byId.get(item.id);
    list.append(el("li", {},
      el("span", { class: "who", text: `${message.author} ` }),
      el("span", { class: "muted", text: `${hhmm(message.time)} · ` }),
      ...item.reasons.map(reasonBadge),
      el("span", { class: "tokens", text: ` ≈${item.tokens} tokens ` }),
      ...item.cuts.map((cut) => el("span", { class: "badge cut", text: cut })),
      item.in_gold === false ? el("span", { class: "badge", text: "not in gold" }) : null,
      el("div", { class: "text", text: clip(item.text, 400) })));
  }
}

function renderScores(trigger, log, warm) {
  if (!state.channel.has_gold) return;
  const fill = (rowId, figures, compare) => {
    const cells = $(rowId).querySelectorAll("td");
    const values = figures ? [figures.precision, figures.recall, figures.f1, figures.parent_recall] : [];
    const base = compare ? [compare.precision, compare.recall, compare.f1, compare.parent_recall] : [];
    cells.forEach((cell, index) => {
      cell.textContent = figures ? fmt(values[index]) : "–";
      cell.classList.toggle("better", compare !== null && values[index] > base[index] + 1e-9);
      cell.classList.toggle("worse", compare !== null && values[index] < base[index] - 1e-9);
    });
  };
  fill("score-trigger", trigger, null);
  fill("score-log", log, state.configScores[warm] ?? null);
  $("score-note").textContent = trigger
    ? `${trigger.gold.length} gold messages for this trigger, ${trigger.missed.length} missed. ` +
      `Whole log: ${log ? log.triggers : 0} triggers, ` +
      `${log ? log.rest_calls_per_trigger : 0} history pages read per trigger; ` +
      `green/red: against the config's values.`
    : "This message has no gold context (not an annotated trigger).";
}

// ---------------------------------------------------------------- store view

async function loadStore() {
  const query = state.storeOldest ? `?before=${state.storeOldest}` : "";
  setStatus("reading the store…");
  let items;
  try {
    items = await api(`/api/store/interactions${query}`);
  } catch (error) {
    setStatus(error.message);
    return;
  }
  const body = $("store-list").querySelector("tbody");
  const sums = state.storeTokens;
  for (const item of items) {
    const cached = item.usage.cached_prompt_tokens;
    const tokens = item.usage.prompt_tokens !== undefined
      ? `${item.usage.prompt_tokens}+${item.usage.completion_tokens ?? "?"}` +
        (cached !== undefined ? ` (${cached} cached)` : "") : "–";
    sums.prompt += item.usage.prompt_tokens ?? 0;
    sums.cached += cached ?? 0;
    const row = el("tr", { "data-id": item.interaction_id, onclick: () => showInteraction(item.interaction_id) },
      el("td", { text: item.started_at.slice(0, 19).replace("T", " ") }),
      el("td", { text: String(item.trigger_message_id) }),
      el("td", { class: `outcome-${item.outcome}`, text: item.outcome }),
      el("td", { text: String(item.message_count) }),
      el("td", { text: tokens }),
      el("td", { text: item.latency_seconds === null ? "–" : `${item.latency_seconds.toFixed(2)} s` }),
      el("td", { class: "excerpt", text: item.removed ? "(removed)" : item.answer_excerpt }));
    body.append(row);
  }
  if (items.length) state.storeOldest = items[items.length - 1].seq;
  else if (state.storeOldest === null) state.storeOldest = 0;
  $("store-more").hidden = items.length < 50;
  $("store-more").onclick = loadStore;
  const share = sums.prompt ? ` (${(100 * sums.cached / sums.prompt).toFixed(1)}%)` : "";
  $("store-tokens").textContent = `${body.children.length} answers shown: ${sums.prompt} prompt ` +
    `tokens, ${sums.cached} of them read from the server's prompt cache${share}`;
  setStatus(`${body.children.length} answers shown`);
}

async function showInteraction(id) {
  setUrl({ view: "store", interaction: id });
  for (const row of $("store-list").querySelectorAll("tbody tr")) {
    row.classList.toggle("active", row.dataset.id === id);
  }
  const pane = $("store-detail");
  let record;
  try {
    record = await api(`/api/store/interactions/${encodeURIComponent(id)}`);
  } catch (error) {
    pane.replaceChildren(el("p", { class: "error", text: error.message }));
    return;
  }
  const usage = record.usage;
  const facts = [
    ["interaction", record.id],
    ["channel", record.channel_id],
    ["trigger", `${record.trigger_message_id} by ${record.trigger_author_id}`],
    ["started", record.started_at],
    ["model", record.model],
    ["parameters", JSON.stringify(record.parameters)],
    ["outcome", record.outcome + (record.error ? `: ${record.error}` : "")],
    ["latency", record.latency_seconds === null ? "–" : `${record.latency_seconds.toFixed(2)} s`],
    ["tokens", Object.keys(usage).length ? Object.entries(usage).map(([k, v]) => `${k} ${v}`).join(", ") : "–"],
    ["answer ids", record.answer_message_ids.join(", ") || "–"],
  ];
  const budget = record.work_log.filter((entry) => entry.action === "budget");
  if (budget.length) facts.push(["token budget", budget[budget.length - 1].detail]);
  const dl = el("dl", { class: "facts" });
  for (const [key, value] of facts) dl.append(el("dt", { text: key }), el("dd", { text: String(value) }));
  const sent = record.request_messages.map((message, index) => {
    const entry = record.context[index];
    const text = typeof message.content === "string" ? message.content
      : message.content === null || message.content === undefined ? "" : JSON.stringify(message.content, null, 1);
    // A turn that called tools shows each call; a tool turn's reasons name the tool it answers.
    const calls = (message.tool_calls || []).map((call) =>
      `→ ${call.function ? call.function.name : "?"}(${call.function ? call.function.arguments : ""})`);
    const content = [text, ...calls].filter(Boolean).join("\n");
    return el("div", { class: "sent" },
      el("span", { class: "role", text: `${index}. ${message.role}` }),
      entry && entry.name ? ` · ${entry.name}` : null,
      entry && entry.message_id ? el("span", { class: "why", text: ` · ${entry.message_id}` }) : null,
      entry && entry.tokens !== null && entry.tokens !== undefined
        ? el("span", { class: "why", text: ` · ~${entry.tokens} tokens` }) : null,
      entry && entry.reasons.length ? el("div", { class: "why", text: entry.reasons.join("; ") }) : null,
      el("pre", { text: content }));
  });
  const inLog = state.byId.has(String(record.trigger_message_id));
  const open = inLog ? el("button", {
    type: "button", text: "Show this trigger in the channel view",
    onclick: () => {
      setUrl({ interaction: null });
      show("channel");
      selectTrigger(String(record.trigger_message_id), true);
    },
  }) : null;
  pane.replaceChildren(
    el("h2", { text: "Interaction" }), dl, open,
    el("h2", { text: `What the model saw (${record.request_messages.length} messages)` }), ...sent,
    el("h2", { text: "Answer" }), el("div", { class: "answer" }, el("pre", { text: record.answer || "(none)" })),
    el("h2", { text: "Work log" }),
    el("p", { class: "muted", text: record.work_log_summary.join("; ") || "nothing recorded" }),
    el("ul", {}, ...record.work_log.map((entry) =>
      el("li", { text: `${entry.action} (${entry.status})${entry.detail ? ": " + entry.detail : ""}` }))),
    el("h2", { text: "Articles" }),
    el("ul", {}, ...(record.articles.length ? record.articles.map((article) =>
      el("li", { text: `${article.url}: ${article.status}${article.reason ? " (" + article.reason + ")" : ""}` }))
      : [el("li", { class: "muted", text: "none" })])));
}

start().catch((error) => setStatus(`error: ${error.message}`));
