// The timeline page: a day's digest and its clips on a time axis (each a keyframe), people with
// their faces (renamed here, or a change undone) and what is known about one of them, search, ask,
// and the open clip: its frames beside its transcript and memories. The keyboard moves along the
// timeline (arrows, Home, End), opens a clip (Enter), closes it (Escape) and searches (/).
// Memory text, names and quotes are shown with textContent only: they are data (transcripts,
// screen text, what a user typed), never markup.
"use strict";

// opened with the sign-in link: the server set a session cookie, so the token leaves the address
// bar (and the history) at once
if (new URLSearchParams(window.location.search).has("token")) window.history.replaceState(null, "", "/");

const $ = (id) => document.getElementById(id);
// range: the timeline's requested [from, to] (undefined: the server's default day); open: the
// clip shown below it and the moment shown, so a change to people can redraw both with new names
// focus: the clip the keyboard is on
const state = { clips: [], from: 0, to: 0, cited: new Set(), range: undefined, open: undefined, forgetNonce: undefined,
                profile: undefined, focus: undefined, reasoning: false, writes: false };
const SOURCES = { user: "named by you", introduced: "introduced themselves", addressed: "called so by others",
                  enrolled: "enrolled", "": "unnamed" };

async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json().catch(() => ({}));
  if (response.status === 401) window.location.replace("/");  // the sign-in expired: its form
  if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
  return body;
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (cls) node.className = cls;
  return node;
}

const clock = (ts) => new Date(ts * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
const dayOf = (ts) => { const d = new Date(ts * 1000); d.setHours(0, 0, 0, 0); return d; };
const isoDay = (d) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;

function status(text) { $("status").textContent = text; }

// a picture from this server; on a 404 (audio, no face) it gives way to ``fallback``'s class
function picture(src, cls, alt, fallback) {
  const img = el("img", undefined, cls);
  Object.assign(img, { src, alt, loading: "lazy", decoding: "async" });
  img.addEventListener("error", () => { img.hidden = true; if (fallback) fallback.classList.add("no-picture"); });
  return img;
}

const initials = (label) => label.replace(/[<>_\d]/g, " ").split(/\s+/).filter(Boolean).slice(0, 2)
  .map((w) => [...w][0].toUpperCase()).join("") || "?";

function personItem(p) {
  const li = el("li", undefined, "person");
  li.dataset.personId = p.id;
  const avatar = el("div", undefined, "avatar");
  avatar.dataset.initials = initials(p.label);
  if (p.faces.length) avatar.append(picture(`/face/${encodeURIComponent(p.id)}`, "face", `${p.label}'s face`, avatar));
  else avatar.classList.add("no-picture");
  li.append(avatar);
  const card = el("div", undefined, "person-card");
  li.append(card);
  const head = el("div", undefined, "person-head");
  head.append(el("strong", p.label, "name"), el("span", SOURCES[p.name_source] ?? p.name_source, "source"));
  if (p.name) head.append(el("span", p.id, "pid"));
  const seen = [p.voices.length ? `voices: ${p.voices.join(", ")}` : "",
                p.faces.length ? `faces: ${p.faces.join(", ")}` : "",
                `${p.clips} clip${p.clips === 1 ? "" : "s"}`].filter(Boolean).join(" · ");
  card.append(head, el("div", seen, "seen"));
  if (p.quote) card.append(el("q", p.quote, "quote"));
  const form = el("form", undefined, "rename");
  const input = el("input");
  Object.assign(input, { type: "text", name: "name", maxLength: 80, placeholder: "Name", autocomplete: "off" });
  input.setAttribute("aria-label", `new name for ${p.label}`);
  form.append(input, el("button", "Rename"));
  const more = el("button", "Profile", "show-profile");
  more.type = "button";
  form.append(more);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = input.value.trim();
    if (name) changePeople(`/people/${encodeURIComponent(p.id)}/name`, { name });
  });
  card.append(form);
  more.setAttribute("aria-label", `what is known about ${p.label}`);
  more.addEventListener("click", () => showProfile(p.id).catch((e) => status(`Profile failed: ${e.message}`)));
  return li;
}

// a link that opens the clip a line cites, at the cited moment
function clipLink(text, clipId, atSourceS) {
  const link = el("a", text);
  link.dataset.clipId = clipId;
  link.addEventListener("click", () => showClip(clipId, atSourceS));
  return link;
}

const dateOf = (iso) => (iso ? iso.slice(0, 10) : "?");

async function showProfile(personId) {
  const p = await api(`/people/${encodeURIComponent(personId)}/profile`);
  state.profile = personId;
  $("profile").hidden = false;
  $("profile-title").textContent = `${p.name || `<${p.id}>`}${p.owner ? " (you)" : ""}`;
  $("profile-summary").textContent = [
    `seen ${dateOf(p.first_seen)} to ${dateOf(p.last_seen)}, in ${p.clips} clip(s)`,
    p.clips_with_owner ? `with you in ${p.clips_with_owner} clip(s), last on ${dateOf(p.last_with_owner)}` : "",
  ].filter(Boolean).join(" · ");
  $("profile-facts").replaceChildren(...p.facts.map((f) => {
    const li = el("li");
    li.append(el("span", f.text), el("span", ` since ${dateOf(f.since)}, last confirmed ${dateOf(f.confirmed)} `, "muted"));
    f.citations.slice(0, 3).forEach((c) => li.append(clipLink("clip", c.clip_id, c.start_s), el("span", " ")));
    f.before.forEach((b) => li.append(el("div", `before: ${b.value} (until ${dateOf(b.until)})`, "muted")));
    return li;
  }));
  if (!p.facts.length) $("profile-facts").replaceChildren(el("li", "no facts stated yet", "muted"));
  const topics = [...new Set(p.statements.map((s) => s.topic))];
  $("profile-statements").replaceChildren(...topics.map((topic) => {
    const group = el("div", undefined, "topic");
    const list = el("ul");
    list.append(...p.statements.filter((s) => s.topic === topic).map((s) => {
      const li = el("li");
      li.append(clipLink(dateOf(s.at), s.clip_id, s.start_s), el("span", " "), el("span", s.text));
      return li;
    }));
    group.append(el("h4", topic), list);
    return group;
  }));
  if (!p.statements.length) $("profile-statements").replaceChildren(el("p", "nothing they said of themselves yet", "muted"));
}

// the day's digest, on this browser's calendar
async function loadDigest(day) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const d = await api(`/digest/day?date=${day}` + (zone ? `&tz=${encodeURIComponent(zone)}` : ""));
  $("digest-title").textContent = d.text.split("\n")[0];
  if (!d.clips) {
    $("digest-summary").textContent = d.text.split("\n").slice(1).join(" ").trim();
    $("digest-moments").replaceChildren();
    return;
  }
  $("digest-summary").textContent = [
    `${d.clips} clip(s), ${clock(Date.parse(d.first) / 1000)} to ${clock(Date.parse(d.last) / 1000)}`,
    d.people.length ? `with ${d.people.map((p) => p.name).join(", ")}` : "",
    d.apps.length ? `in front: ${d.apps.map((a) => a.name).join(", ")}` : "",
    d.places.length ? `at ${d.places.map((p) => p.name).join("; ")}` : "",
  ].filter(Boolean).join(" · ");
  $("digest-moments").replaceChildren(...d.moments.map((m) => {
    const li = el("li");
    li.append(clipLink(clock(Date.parse(m.at) / 1000), m.clip_id, m.start_s), el("span", " "), el("span", m.text));
    return li;
  }));
  $("digest-write").hidden = !state.writes;
  $("digest-write-status").textContent = "";
  $("digest-written").replaceChildren();
}

// the day retold by the model (health's writes): each sentence kept cites its clips
async function writeDay() {
  const day = $("day").value;
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  $("digest-write-status").textContent = "The model is writing…";
  try {
    const d = await api(`/digest/day?date=${day}&written=true` + (zone ? `&tz=${encodeURIComponent(zone)}` : ""));
    if ($("day").value !== day) return;
    const w = d.written;
    if (!w) { $("digest-write-status").textContent = "Nothing to write up."; return; }
    $("digest-write-status").textContent = w.error ? `Not written: ${w.error.replace(/^https?:\/\/\S+: /, "")}`
      : w.sentences.length ? `Written by ${w.model}` : `${w.model} wrote nothing the moments support`;
    $("digest-written").replaceChildren(...w.sentences.map((s) => {
      const li = el("li", `${s.text} `);
      for (const id of new Set(s.clip_ids)) li.append(clipLink(`[${id.slice(0, 8)}…]`, id));
      return li;
    }));
  } catch (e) { $("digest-write-status").textContent = `Not written: ${e.message}`; }
}

async function loadPeople() {
  const people = await api("/people");
  const list = $("people");
  list.replaceChildren(...people.map(personItem));
  if (!people.length) list.replaceChildren(el("li", "nobody yet", "muted"));
}

// a change to people (rename, undo): names are resolved when read, so the people, the timeline
// and the open clip are read again and show the change at once
async function changePeople(path, body) {
  $("people-status").textContent = "Saving…";
  try {
    const out = await api(path, { method: "POST", headers: { "Content-Type": "application/json" },
                                  body: JSON.stringify(body || {}) });
    const done = out.undid ? `Undid: ${out.undid.description}` : `Saved: ${out.change.description}`;
    await Promise.all([loadPeople(), loadTimeline(...(state.range || [])),
                       state.open ? showClip(...state.open) : Promise.resolve(),
                       state.profile ? showProfile(state.profile).catch(closeProfile) : Promise.resolve()]);
    $("people-status").textContent = done;
  } catch (e) { $("people-status").textContent = `Not changed: ${e.message}`; }
}

async function loadTimeline(from, to) {
  state.range = from === undefined ? undefined : [from, to];
  const query = from === undefined ? "" : `?from=${from}&to=${to}`;
  const t = await api(`/timeline${query}`);
  state.clips = t.clips;
  if (!t.clips.length) {
    state.from = t.from_ts; state.to = t.to_ts;
  } else {  // zoom onto the clips of the range, with a margin
    const first = t.clips[0].start_ts, last = t.clips[t.clips.length - 1].end_ts;
    const pad = Math.max(5, (last - first) * 0.03);
    state.from = Math.max(t.from_ts, first - pad); state.to = Math.min(t.to_ts, last + pad);
  }
  $("day").value = isoDay(dayOf(t.clips.length ? t.clips[0].start_ts : t.to_ts));
  $("timeline-title").textContent = `Timeline: ${t.clips.length} clip(s) on ${$("day").value}` +
    (t.truncated ? " (more in this range than shown)" : "");
  drawTimeline();
  await loadDigest($("day").value).catch((e) => { $("digest-summary").textContent = `Digest failed: ${e.message}`; });
  status(t.clips.length ? "Pick a clip, search, or ask a question." : "No clips on this day.");
}

function closeProfile() {
  state.profile = undefined;
  $("profile").hidden = true;
}

function drawTimeline() {
  const span = Math.max(1, state.to - state.from);
  const x = (ts) => `${((ts - state.from) / span) * 100}%`;
  const ticks = [];
  const step = [10, 30, 60, 300, 900, 1800, 3600, 7200, 21600].find((s) => span / s <= 8) || 21600;
  for (let ts = Math.ceil(state.from / step) * step; ts <= state.to; ts += step) {
    const tick = el("span", clock(ts), "tick");
    tick.style.left = x(ts);
    const at = (ts - state.from) / span;
    if (at < 0.05 || at > 0.95) tick.style.transform = at < 0.05 ? "none" : "translateX(-100%)";  // keep labels inside
    ticks.push(tick);
  }
  $("axis").replaceChildren(...ticks);
  const current = state.open ? state.open[0] : state.focus;
  const focusable = state.clips.some((c) => c.clip_id === current) ? current : state.clips[0]?.clip_id;
  const track = $("track");
  track.replaceChildren(...state.clips.map((c) => {
    const box = el("div", undefined, "clip");
    box.dataset.clipId = c.clip_id;
    box.setAttribute("role", "option");
    box.tabIndex = c.clip_id === focusable ? 0 : -1;  // one stop for Tab; the arrows move within
    box.style.left = x(c.start_ts);
    box.style.width = `calc(${((c.end_ts - c.start_ts) / span) * 100}% - 2px)`;
    box.title = `${clock(c.start_ts)}–${clock(c.end_ts)}: ${c.memories.length} memories`;
    box.setAttribute("aria-label", `${clock(c.start_ts)}, ${c.people.join(", ") || "nobody"}, ${c.memories.length} memories`);
    const label = el("span", undefined, "label");
    label.append(el("span", c.people.join(", ") || "—", "who"), el("span", `${clock(c.start_ts)} · ${c.memories.length} memories`, "count"));
    box.append(filmstrip(c, (track.clientWidth * (c.end_ts - c.start_ts)) / span, box), label);
    if (state.cited.has(c.clip_id)) box.classList.add("cited");
    const open = state.open && state.open[0] === c.clip_id;
    box.classList.toggle("selected", Boolean(open));
    box.setAttribute("aria-selected", String(Boolean(open)));
    box.addEventListener("click", () => showClip(c.clip_id));
    box.addEventListener("focus", () => { state.focus = c.clip_id; });
    return box;
  }));
}

// a clip's tile: keyframes side by side, as many as fit its width at about 16:9 (one: its middle);
// a clip without pictures (sound, a GPS track, a moved file) gets the neutral tile instead
function filmstrip(c, widthPx, box) {
  const strip = el("span", undefined, "strip");
  if (widthPx < 16) return strip;  // a sliver on a long day: no picture to see, none cut
  const n = Math.max(1, Math.min(8, Math.round(widthPx / 210)));
  const id = encodeURIComponent(c.clip_id);
  for (let k = 0; k < n; k += 1) {
    const at = n === 1 ? "" : `?at=${(((k + 0.5) * (c.end_ts - c.start_ts)) / n).toFixed(2)}`;
    const img = picture(`/thumb/${id}${at}`, "thumb", "");
    img.addEventListener("error", () => {
      if ([...strip.children].every((i) => i.hidden)) box.classList.add("no-picture");
    });
    strip.append(img);
  }
  return strip;
}

// the keyboard on the timeline: arrows and Home/End move the focus along the clips, Enter (or
// space) opens the focused one; anywhere, Escape closes the open clip or profile and / searches
function timelineKeys(event) {
  const boxes = [...document.querySelectorAll("#track .clip")];
  const at = boxes.indexOf(document.activeElement);
  if (at < 0) return;
  const to = { ArrowRight: at + 1, ArrowDown: at + 1, ArrowLeft: at - 1, ArrowUp: at - 1, Home: 0, End: boxes.length - 1 }[event.key];
  if (to !== undefined) {
    event.preventDefault();
    const next = boxes[Math.max(0, Math.min(boxes.length - 1, to))];
    boxes.forEach((b) => { b.tabIndex = b === next ? 0 : -1; });
    next.focus();
    next.scrollIntoView({ block: "nearest", inline: "nearest" });
  } else if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    showClip(boxes[at].dataset.clipId).catch((e) => status(`Clip failed: ${e.message}`));
  }
}

function pageKeys(event) {
  const typing = event.target.closest("input, textarea, select");
  if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
    event.preventDefault();
    $("search-input").focus();
    $("search-input").select();
  } else if (event.key === "Escape") {
    if (typing) { event.target.blur(); return; }
    if (!$("clip").hidden) closeClip();
    else if (!$("profile").hidden) closeProfile();
  }
}

function closeClip() {
  const clipId = state.open && state.open[0];
  state.open = undefined;
  state.forgetNonce = undefined;
  $("clip").hidden = true;
  document.querySelectorAll("#track .clip").forEach((b) => {
    b.classList.remove("selected");
    b.setAttribute("aria-selected", "false");
  });
  const box = clipId && document.querySelector(`#track .clip[data-clip-id="${CSS.escape(clipId)}"]`);
  if (box) box.focus();  // back where the clip was opened from
}

const FRAMES = 5;  // pictures across an open clip

// atSourceS: a moment in the source recording (a citation's start) whose frame to show
async function showClip(clipId, atSourceS) {
  const c = await api(`/clips/${encodeURIComponent(clipId)}`);
  const wasOpen = state.open && state.open[0];
  state.open = [clipId, atSourceS];
  state.focus = clipId;
  document.querySelectorAll("#track .clip").forEach((b) => {
    const open = b.dataset.clipId === clipId;
    b.classList.toggle("selected", open);
    b.setAttribute("aria-selected", String(open));
    b.tabIndex = open ? 0 : -1;
  });
  $("clip").hidden = false;
  $("clip-title").textContent = `Clip ${c.index + 1}: ${clock(c.start_ts)}–${clock(c.end_ts)}`;
  const at = atSourceS === undefined ? "" : `&at=${Math.min(c.duration_s, Math.max(0, atSourceS - c.offset_s)).toFixed(2)}`;
  $("clip").classList.remove("no-pictures");  // back if the clip has no picture (audio, a moved file)
  $("clip-frame").src = `${c.media_url}?kind=frame${at}`;
  // frames across the clip, each a button that shows that moment large
  $("clip-frames").replaceChildren(...Array.from({ length: FRAMES }, (_, k) => {
    const s = ((k + 0.5) * c.duration_s) / FRAMES;
    const button = el("button", undefined, "frame");
    button.type = "button";
    button.title = `${clock(c.start_ts + s)}`;
    button.setAttribute("aria-label", `the frame at ${clock(c.start_ts + s)}`);
    button.append(picture(`/thumb/${encodeURIComponent(clipId)}?at=${s.toFixed(2)}`, "", "", button));
    button.addEventListener("click", () => {
      document.querySelectorAll("#clip-frames .frame").forEach((b) => b.classList.toggle("current", b === button));
      $("clip-frame").src = `${c.media_url}?kind=frame&at=${s.toFixed(2)}`;
    });
    return button;
  }));
  $("clip-people").textContent = c.people.length ? `People: ${c.people.join(", ")}` : "Nobody recognised";
  $("clip-memories").replaceChildren(...c.memories.map((m) => {
    const li = el("li");
    li.append(el("span", m.kind, "kind"), el("span", m.text));
    return li;
  }));
  $("clip-transcript").textContent = c.transcript || "(no speech)";
  $("clip-screen").textContent = c.screen_text || "(no text on screen)";
  $("clip-location").textContent = c.media_location;
  $("forget-status").textContent = "";
  $("clip-forget-confirm").hidden = true;
  state.forgetNonce = undefined;
  if (wasOpen !== clipId) $("clip").scrollIntoView({ block: "nearest" });
}

// forgetting the open clip: first what would go (the server's preview gives a single-use nonce),
// then (a second button) for good, sending that nonce back with the same clip
async function forgetClip(confirm) {
  const clipId = state.open && state.open[0];
  const nonce = state.forgetNonce;
  if (!clipId || (confirm && !nonce)) return;
  state.forgetNonce = undefined;  // good once: a failed confirmation needs a new preview
  if (confirm) $("clip-forget-confirm").hidden = true;
  try {
    const out = await api("/forget", { method: "POST", headers: { "Content-Type": "application/json" },
                                       body: JSON.stringify(confirm ? { clip: clipId, nonce } : { clip: clipId }) });
    const what = `${out.clips} clip(s) and ${out.memories} memories`;
    if (!confirm) {
      if (!out.nonce) { $("forget-status").textContent = "Nothing to forget."; return; }
      state.forgetNonce = out.nonce;
      $("forget-status").textContent = `Would forget ${what}, from every file of the store. This cannot be undone.`;
      $("clip-forget-confirm").hidden = false;
      return;
    }
    state.open = undefined;
    $("clip").hidden = true;
    await Promise.all([loadPeople(), loadTimeline(...(state.range || [])),
                       state.profile ? showProfile(state.profile).catch(closeProfile) : Promise.resolve()]);
    status(`Forgotten: ${what}.`);
  } catch (e) { $("forget-status").textContent = `Not forgotten: ${e.message}`; }
}

function citationItems(citations) {
  return citations.map((c) => {
    const li = el("li");
    const link = el("a", `clip ${c.clip_id.slice(0, 12)}… at ${c.start_s.toFixed(1)}–${c.end_s.toFixed(1)} s of ${c.source.split("/").pop()}`);
    link.addEventListener("click", () => showClip(c.clip_id, c.start_s));
    li.append(link);
    return li;
  });
}

// where answers are reasoned (health's reasoning), the quick offline answer is shown at once and
// the model's follows, with its citations, or "not in memory" with the closest memories
async function ask(event) {
  event.preventDefault();
  const question = $("ask-input").value.trim();
  if (!question) return;
  status("Thinking…");
  const post = (body) => api("/ask", { method: "POST", headers: { "Content-Type": "application/json" },
                                       body: JSON.stringify(body) });
  try {
    const a = await post({ question, quick: state.reasoning });
    $("answer").hidden = false;
    $("answer-title").textContent = state.reasoning ? "Quick answer" : "Answer";
    $("answer-text").textContent = a.answer;
    $("reasoned").hidden = !state.reasoning;
    state.cited = new Set(a.citations.map((c) => c.clip_id));
    $("citations").replaceChildren(...citationItems(a.citations));
    drawTimeline();
    if (a.citations.length) await showClip(a.citations[0].clip_id, a.citations[0].start_s);
    if (!state.reasoning) { status("Answered."); return; }
    $("reasoned-text").textContent = "The model is reading the memories found…";
    $("reasoned-citations").replaceChildren();
    $("reasoned-steps").textContent = "";
    const r = await post({ question });
    if ($("ask-input").value.trim() !== question) return;  // another question was asked meanwhile
    $("reasoned-text").textContent = r.answer;
    $("reasoned-citations").replaceChildren(...citationItems(r.citations));
    if (!r.citations.length && r.closest.length) {
      $("reasoned-citations").replaceChildren(el("li", "closest memories:", "muted"), ...citationItems(r.closest));
    }
    $("reasoned-steps").textContent = r.steps.slice(1).join("; ");
    if (r.citations.length) {
      state.cited = new Set(r.citations.map((c) => c.clip_id));
      drawTimeline();
    }
    status("Answered.");
  } catch (e) { status(`Ask failed: ${e.message}`); }
}

async function search(event) {
  event.preventDefault();
  const q = $("search-input").value.trim();
  if (!q) return;
  try {
    const hits = await api(`/search?q=${encodeURIComponent(q)}&limit=10`);
    $("results").hidden = false;
    $("result-list").replaceChildren(...hits.map((m) => {
      const li = el("li");
      const link = el("a", `${clock(m.start_ts)}`);
      link.addEventListener("click", () => showClip(m.clip_id));
      li.append(link, el("span", " "), el("span", m.kind, "kind"), el("span", m.text));
      return li;
    }));
    if (!hits.length) $("result-list").replaceChildren(el("li", "nothing found", "muted"));
  } catch (e) { status(`Search failed: ${e.message}`); }
}

function pickDay() {
  const [y, m, d] = $("day").value.split("-").map(Number);
  if (!y) return;
  const from = new Date(y, m - 1, d).getTime() / 1000;
  loadTimeline(from, from + 86400).catch((e) => status(`Timeline failed: ${e.message}`));
}

$("ask-form").addEventListener("submit", ask);
$("search-form").addEventListener("submit", search);
$("day").addEventListener("change", pickDay);
$("people-undo").addEventListener("click", () => changePeople("/people/undo"));
$("profile-close").addEventListener("click", closeProfile);
$("clip-forget").addEventListener("click", () => forgetClip(false));
$("clip-forget-confirm").addEventListener("click", () => forgetClip(true));
// a clip with no picture (sound, a GPS track, a moved file): its words take the whole width
$("clip-frame").addEventListener("error", () => { $("clip").classList.add("no-pictures"); });
$("clip-close").addEventListener("click", closeClip);
$("track").addEventListener("keydown", timelineKeys);
document.addEventListener("keydown", pageKeys);
$("digest-write").addEventListener("click", writeDay);
api("/health").then((h) => { state.reasoning = h.reasoning; state.writes = h.writes; })
  .catch(() => {})
  .then(() => Promise.all([loadPeople(), loadTimeline()]))
  .catch((e) => status(`Loading failed: ${e.message}`));
