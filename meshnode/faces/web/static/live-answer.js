// The main LLM's answer as it is written: the feed's `llm_token` events (faces/web/live_feed.py) shown
// in a bubble that grows, used by the conversation (the thread being answered) and /mind (any tick).
// Nothing here is kept: the stored answer comes with the tick (and the reply with the `chat` event);
// the page then calls done(). The bubble is aria-busy while it grows and outside any aria-live
// region (a screen reader hears the stored answer once, not every 50 ms piece).
import { stream } from "./api.js";
import { el, clear } from "./ui.js";

/** What a person reads of an answer being written: the reply a note_add command is writing (its
 * "text", decoded as far as it came), else the prose before the commands block. */
export function readable(raw) {
  const cut = raw.indexOf("# Commands:");
  const prose = (cut >= 0 ? raw.slice(0, cut) : raw).trim();
  if (cut < 0) return { prose, reply: null };
  const lines = raw.slice(cut).split("\n").filter((l) => l.includes("note_add"));
  const m = lines.length ? /"text"\s*:\s*"((?:[^"\\]|\\.)*)/.exec(lines[lines.length - 1]) : null;
  if (!m) return { prose, reply: null };
  let body = m[1].replace(/\\u[0-9a-fA-F]{0,3}$/, "").replace(/\\$/, "");
  try { body = JSON.parse(`"${body}"`); } catch (err) { /* shown as it came */ }
  return { prose, reply: body };
}

/**
 * liveAnswer(parent, {wants(data) -> bool, reply: bool, before: Node, keep: bool}) shows each answer
 * `wants` accepts in a bubble appended to `parent` (or inserted before `before`); `keep` false: gone
 * when the LLM has written it (/mind: the tick, stored, shows it). `reply`: show the reply a
 * note_add writes, with the prose as the agent's thinking. Returns {node(), done(), settle(tick)}:
 * settle removes the bubble once its answer is stored (the bubble of tick <= `tick`, or, without a
 * tick, one whose answer has ended), never the bubble of a newer tick already being written.
 */
export function liveAnswer(parent, { wants = () => true, reply = false, before = null, keep = true } = {}) {
  let bubble = null, raw = "", tick = null, painted = false;
  const who = el("span", { class: "who", text: "Agent" });
  const state = el("span", { class: "live-state", text: "" });
  const thinking = el("div", { class: "live-thinking" });
  const body = el("div", { class: "body live-text" });

  function show(data) {
    if (bubble === null) {
      bubble = el("article", { class: "msg agent live", id: "live-answer", attrs: { "aria-busy": "true", "aria-label": "the agent's answer as it is written" } },
        el("div", { class: "live-head" }, who, state), thinking, body);
      if (before && before.parentNode === parent) parent.insertBefore(bubble, before); else parent.append(bubble);
    }
    bubble.dataset.tick = String(data.tick);
    tick = data.tick;
  }

  function paint() {
    if (!bubble) return;
    const r = reply ? readable(raw) : { prose: "", reply: raw };
    if (reply && r.reply !== null) {
      thinking.textContent = r.prose;
      body.textContent = r.reply;
    } else {
      thinking.textContent = "";
      body.textContent = reply ? r.prose : raw;
    }
    if (!painted && raw) {  // when the first piece is on screen (bench/web.py reads it)
      painted = true;
      const b = bubble;
      requestAnimationFrame(() => { b.dataset.firstTokenMs = String(Date.now()); });  // the wall clock, as the LLM's
    }
  }

  function done() {
    if (bubble) bubble.remove();
    bubble = null; raw = ""; tick = null; painted = false;
    clear(thinking); clear(body);
  }

  function settle(stored = null) {
    if (bubble === null) return;
    if (stored === null || stored === undefined ? bubble.dataset.ended === "yes" : tick <= stored) done();
  }

  stream(["llm_token"], (type, data) => {
    if (type !== "llm_token" || !data) return;
    if (!wants(data)) { if (tick === data.tick) done(); return; }
    if (data.state === "start") {
      done(); show(data);
      state.textContent = ` is thinking (tick ${data.tick}${data.llm ? `, ${data.llm}` : ""})…`;
    } else if (data.state === "text") {
      if (tick !== data.tick) { done(); show(data); state.textContent = ` is writing (tick ${data.tick})…`; }
      if (data.offset > raw.length && raw.length === 0) raw = "… ";  // opened mid-answer
      raw += data.text || "";
      state.textContent = ` is writing (tick ${data.tick})…`;
      paint();
    } else if (data.state === "restart" && tick === data.tick) {
      raw = ""; paint(); state.textContent = " starts again (the LLM was asked again)…";
    } else if (data.state === "end" && tick === data.tick) {
      if (!data.ok || !keep) { done(); return; }
      bubble.setAttribute("aria-busy", "false");
      state.textContent = " has written this; the tick goes on (checks, commands)…";
      bubble.dataset.ended = "yes";
    }
  });
  return { node: () => bubble, done, settle };
}
