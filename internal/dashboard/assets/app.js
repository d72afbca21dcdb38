// keel dashboard: renders the view the server sends (GET /api/view, then server-sent events on
// /api/events) and posts the actions. No framework and no build step: the DOM is rebuilt from
// each view; uPlot draws the plots.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const q = (s, el) => (el || document).querySelector(s);
  const colors = { red: "#dc2626", blue: "#2563eb", green: "#16a34a", yellow: "#ca8a04", purple: "#9333ea", orange: "#ea580c", pink: "#db2777", cyan: "#0891b2" };
  let view = null, selected = null, plotted = "", conversationKey = "";

  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(el.dataset, v);
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const kid of kids.flat()) if (kid !== null && kid !== undefined && kid !== false) el.append(kid instanceof Node ? kid : String(kid));
    return el;
  }
  const usd = (v, priced) => (priced === false ? "—" : "$" + v.toFixed(v < 1 ? 4 : 2));
  const num = (n) => (n >= 1e6 ? (n / 1e6).toFixed(1) + "M" : n >= 1e3 ? (n / 1e3).toFixed(1) + "k" : String(n));
  const pct = (x) => Math.round(x * 100) + "%";
  const ago = (t) => { const s = Math.max(0, (Date.now() - new Date(t)) / 1000); return s < 60 ? Math.round(s) + "s ago" : s < 3600 ? Math.round(s / 60) + "m ago" : new Date(t).toLocaleString(); };
  const badge = (s) => h("span", { class: "badge " + s }, s);
  const tokens = (u) => u.input_tokens + u.output_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;

  async function post(path, body) {
    const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json", "X-Keel-Token": token }, body: JSON.stringify(body) });
    const out = await r.json().catch(() => ({}));
    if (!r.ok) alert(out.error || r.statusText);
    return r.ok;
  }

  function render() {
    if (!view) return;
    document.body.dataset.rendered = String(Date.now());
    q("#updated").textContent = "updated " + new Date().toLocaleTimeString();
    const probs = q("#problems");
    probs.hidden = !(view.problems && view.problems.length);
    probs.replaceChildren(...(view.problems || []).map((p) => h("div", { class: "problem" }, "damaged: " + p)));
    renderSessions();
    renderSession();
    renderTeams();
    renderJobs();
  }

  function renderSessions() {
    if (!selected && view.sessions.length) selected = (view.sessions.find((s) => s.requests && s.requests.length) || view.sessions[0]).id;
    q("#sessions tbody").replaceChildren(...view.sessions.map((s) =>
      h("tr", { class: "session-row" + (s.id === selected ? " selected" : ""), dataset: { id: s.id }, onclick: () => { selected = s.id; plotted = ""; render(); } },
        h("td", {}, badge(s.damaged ? "damaged" : s.state)),
        h("td", { title: s.id }, s.title || s.id.slice(0, 8)),
        h("td", { class: "muted" }, s.project),
        h("td", {}, s.model || "—"),
        h("td", {}, s.turns),
        h("td", {}, usd(s.costUsd, s.priced)),
        h("td", {}, num(tokens(s.usage))),
        h("td", {}, s.turns ? pct(s.cacheReadShare) : "—"),
        h("td", { class: "muted" }, ago(s.updated)))));
  }

  function renderSession() {
    const s = view.sessions.find((x) => x.id === selected);
    q("#session").hidden = !s;
    if (!s) return;
    q("#session-title").textContent = (s.title || s.id) + " — " + s.state;
    const key = s.id + ":" + (s.requests || []).length + ":" + (s.breaks || []).length;
    if (key !== plotted) {
      plotted = key;
      plots(s);
    }
    const ckey = s.id + ":" + s.messages;
    if (ckey !== conversationKey) {
      conversationKey = ckey;
      fetch("/api/session?id=" + encodeURIComponent(s.id) + "&token=" + encodeURIComponent(token)).then((r) => r.json()).then(renderConversation);
    }
  }

  function renderConversation(c) {
    const items = (c.entries || []).map((e) => h("li", { class: e.role }, h("span", { class: "role" }, e.role),
      ...e.blocks.map((b) => b.type === "text" ? b.text
        : b.type === "tool_use" ? h("span", { class: "tool" }, "→ " + b.name + " " + JSON.stringify(b.input))
        : b.type === "tool_result" ? h("span", { class: "muted" }, "← " + (b.content || []).map((x) => x.text || "").join(" ").slice(0, 400))
        : "")));
    if (c.error) items.unshift(h("li", { class: "problem" }, "damaged: " + c.error));
    q("#conversation").replaceChildren(...items);
  }

  function plot(el, series, data, marks) {
    el.replaceChildren();
    if (!data[0].length) { el.append(h("p", { class: "muted" }, "no requests recorded")); return; }
    const width = Math.max(320, el.clientWidth || 380);
    // Marks (cache breaks, compactions) are placed once uPlot has laid out its scales, and
    // again whenever it redraws.
    const mark = (u) => {
      u.over.querySelectorAll(".break-line, .break-label").forEach((x) => x.remove());
      for (const m of marks || []) {
        const x = Math.round(u.valToPos(m.n - 0.5, "x"));
        u.over.append(h("div", { class: "break-line", style: "left:" + x + "px" }), h("div", { class: "break-label", style: "left:" + x + "px", title: m.reason || "" }, m.label));
      }
    };
    const axes = [{ label: "request", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500] }, { scale: series[0].scale }];
    if (series.some((s) => s.scale === "y2")) axes.push({ scale: "y2", side: 1, grid: { show: false } });
    new uPlot({ width, height: 200, series: [{ label: "request" }, ...series], axes, scales: { x: { time: false } }, hooks: { draw: [mark] } }, data, el);
  }

  function plots(s) {
    const rs = s.requests || [];
    const n = rs.map((r) => r.n);
    plot(q("#cost-plot"), [{ label: "cost $", stroke: "#b91c1c", scale: "usd" }, { label: "tokens", stroke: "#2563eb", scale: "y2" }],
      [n, rs.map((r) => r.costUsd), rs.map((r) => tokens(r.usage))]);
    plot(q("#cache-plot"), [{ label: "cache read share", stroke: "#15803d", scale: "share", value: (u, v) => v == null ? "—" : pct(v) }],
      [n, rs.map((r) => r.share)], (s.breaks || []).map((b) => ({ n: b.n, label: b.segment, reason: b.reason })));
    plot(q("#context-plot"), [{ label: "input tokens", stroke: "#7c3aed", scale: "tok" }],
      [n, rs.map((r) => r.context)], (s.compactions || []).map((c) => ({ n: c, label: "compacted" })));
  }

  function keepInputs(root, f) {
    const saved = {};
    root.querySelectorAll("input[name], select[name]").forEach((el) => { saved[el.closest("[data-team]").dataset.team + "/" + el.name] = el.value; });
    const focused = document.activeElement && document.activeElement.name;
    f();
    root.querySelectorAll("input[name], select[name]").forEach((el) => {
      const k = el.closest("[data-team]").dataset.team + "/" + el.name;
      if (k in saved) el.value = saved[k];
      if (el.name === focused) el.focus();
    });
  }

  // Teams are rebuilt only when they changed, so a button is not replaced under the pointer.
  let teamsKey = "";
  function renderTeams() {
    const root = q("#teams");
    const key = JSON.stringify(view.teams);
    if (key === teamsKey) return;
    teamsKey = key;
    if (!view.teams.length) { root.replaceChildren(h("p", { class: "muted" }, "No teams.")); return; }
    keepInputs(root, () => root.replaceChildren(...view.teams.map(team)));
  }

  function team(t) {
    const names = t.members.map((m) => m.name);
    const send = h("form", { class: "send", onsubmit: async (e) => {
      e.preventDefault();
      const f = e.target;
      if (await post("/api/message", { team: t.name, to: f.to.value, text: f.text.value })) f.text.value = "";
    } }, h("select", { name: "to" }, ...names.map((n) => h("option", { value: n }, n))), h("input", { type: "text", name: "text", placeholder: "message a member" }), h("button", { type: "submit" }, "send"));
    return h("div", { class: "team", dataset: { team: t.name } },
      h("h3", {}, t.name),
      t.requests.length ? h("div", { class: "requests" }, ...t.requests.map((r) => h("div", { class: "request", dataset: { id: r.id } },
        h("span", { class: "dot", style: "background:" + (colors[r.color] || r.color || "#9ca3af") }), h("b", {}, r.from), " asks to use ", h("b", { class: "tool-name" }, r.tool), ": ",
        h("code", {}, r.input), r.reason ? h("div", { class: "muted" }, r.reason) : null,
        h("div", {}, h("button", { class: "allow", onclick: () => post("/api/answer", { team: t.name, id: r.id, allow: true }) }, "Allow"), " ",
          h("button", { class: "deny", onclick: () => post("/api/answer", { team: t.name, id: r.id, allow: false }) }, "Deny"))))) : null,
      h("div", { class: "team-grid" },
        h("div", {}, h("h3", {}, "Members"), h("table", { class: "members" }, h("tbody", {}, ...t.members.map((m) => h("tr", { class: "member", dataset: { name: m.name } },
          h("td", {}, h("span", { class: "dot", style: "background:" + (colors[m.color] || m.color || "#9ca3af") }), m.name),
          h("td", {}, h("span", { class: "state badge " + m.state }, m.state)),
          h("td", { class: "muted" }, m.agent_type + " · " + m.runner + (m.host ? " @ " + m.host : "")),
          h("td", {}, m.task ? "#" + m.task : ""),
          h("td", { class: "muted" }, num(m.tokens) + " tok")))))),
        h("div", {}, h("h3", {}, "Board"), t.tasks.length ? h("table", { class: "board" }, h("tbody", {}, ...t.tasks.map((k) => h("tr", { class: "task", dataset: { id: k.id } },
          h("td", {}, "#" + k.id), h("td", {}, k.subject), h("td", {}, h("span", { class: "status badge " + k.status }, k.status)),
          h("td", {}, k.owner || ""), h("td", { class: "muted" }, (k.blockedBy || []).length ? "after #" + k.blockedBy.join(", #") : ""))))) : h("p", { class: "muted" }, "No tasks.")),
        h("div", {}, h("h3", {}, "Mail"), h("ul", { class: "mail" }, ...t.mail.slice(-30).map((m) => h("li", { class: m.read ? "" : "unread" },
          m.from + " → " + m.to + (m.type && m.type !== "message" ? " [" + m.type + "]" : "") + ": " + (m.summary || m.text || "").slice(0, 200)))), send)));
  }

  function renderJobs() {
    q("#jobs tbody").replaceChildren(...(view.jobs.length ? view.jobs.map((j) => h("tr", { class: "job", dataset: { id: j.id } },
      h("td", {}, j.description + (j.agentType ? " (" + j.agentType + ")" : "")), h("td", {}, badge(j.state)), h("td", { class: "muted" }, (j.sessionId || "").slice(0, 8)),
      h("td", { class: "muted" }, ago(j.created)),
      h("td", {}, j.state === "running" || j.state === "pending" ? h("button", { class: "stop", onclick: () => post("/api/stop", { id: j.id }) }, "Stop") : (j.error || "")))) :
      [h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No background agents."))]));
  }

  function connect() {
    const es = new EventSource("/api/events?token=" + encodeURIComponent(token));
    es.addEventListener("view", (e) => { view = JSON.parse(e.data); q("#status").textContent = "live"; q("#status").className = "status live"; render(); });
    es.onerror = () => { q("#status").textContent = "disconnected — retrying"; q("#status").className = "status down"; };
  }
  connect();
})();
