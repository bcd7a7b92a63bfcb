// gtid-audit report: evidence panel for the topology graphs, filters and pages for the findings table.
// Everything it needs is in the page (#report-data); it makes no request.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var PAGE_SIZE = 50;

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  // ---- evidence panel -------------------------------------------------------------------------
  var panel = document.getElementById("evidence");

  function showPair(id) {
    var pair = data.pairs[id];
    if (!pair) { return; }
    document.querySelectorAll("g.edge.selected").forEach(function (g) { g.classList.remove("selected"); });
    var edge = document.getElementById(id);
    if (edge) { edge.classList.add("selected"); }
    panel.textContent = "";
    var head = el("h3", {}, (pair.source || "?") + " \u2192 " + pair.replica +
                  (pair.channel ? " (channel " + pair.channel + ")" : ""));
    panel.appendChild(head);
    var note = pair.note ? el("p", {"class": "note"}, pair.note.charAt(0).toUpperCase() + pair.note.slice(1) + ".")
                         : null;
    if (!pair.findings.length) {
      panel.appendChild(el("p", {"class": "state-" + pair.state},
        pair.state === "ok" ? "Healthy: audited, no finding on this channel."
                            : "Not audited: a side was not collected or the source is unknown."));
      if (note) { panel.appendChild(note); }
      return;
    }
    if (note) { panel.appendChild(note); }
    pair.findings.forEach(function (f) {
      var box = el("div", {"class": "finding"});
      var title = el("p", {});
      title.appendChild(el("span", {"class": "badge state-" + (f.silenced ? "silenced" : f.severity)},
                           f.severity + (f.silenced ? " (silenced)" : "")));
      var link = el("a", {"href": "#explain-" + f.check_id}, " " + f.check_id);
      title.appendChild(link);
      box.appendChild(title);
      box.appendChild(el("p", {}, f.title));
      box.appendChild(el("p", {"class": "muted"}, f.detail));
      if (f.gtid_set) {
        box.appendChild(el("p", {}, "GTIDs at stake (the difference)" + (f.gtid_count !== null ? " (" + f.gtid_count + ")" : "") + ":"));
        box.appendChild(el("pre", {"class": "difference"}, f.gtid_set));
      }
      var keys = Object.keys(f.evidence || {});
      if (keys.length) {
        var table = el("table", {"class": "plain evidence"});
        keys.forEach(function (k) {
          var tr = el("tr");
          tr.appendChild(el("th", {}, k));
          var td = el("td");
          td.appendChild(el("code", {}, f.evidence[k] === null ? "null" : f.evidence[k]));
          tr.appendChild(td);
          table.appendChild(tr);
        });
        box.appendChild(table);
      }
      if (f.remediation) {
        box.appendChild(el("p", {}, "What to do:"));
        box.appendChild(el("pre", {"class": "remediation"}, f.remediation));
      }
      panel.appendChild(box);
    });
  }

  document.querySelectorAll(".graph g.edge").forEach(function (g) {
    g.addEventListener("click", function (ev) { ev.preventDefault(); showPair(g.id); });
  });

  // ---- findings table -------------------------------------------------------------------------
  var col = {};
  data.columns.forEach(function (name, i) { col[name] = i; });
  var filters = ["severity", "cluster", "check", "status"].map(function (name) {
    return document.getElementById("filter-" + name);
  });
  var tbody = document.querySelector("#findings-table tbody");
  var page = 0;
  var matching = [];

  function apply() {
    var sev = filters[0].value, cluster = filters[1].value, check = filters[2].value, status = filters[3].value;
    matching = data.rows.filter(function (r) {
      return (!sev || r[col.severity] === sev) && (!cluster || r[col.cluster] === cluster) &&
             (!check || r[col.check_id] === check) && (!status || r[col.status] === status);
    });
    page = 0;
    draw();
  }

  function draw() {
    var pages = Math.max(1, Math.ceil(matching.length / PAGE_SIZE));
    page = Math.min(Math.max(page, 0), pages - 1);
    var rows = matching.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE);
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) {
      var tr = el("tr", {"class": "sev-" + r[col.severity]});
      tr.appendChild(el("td", {"class": "sev"}, r[col.severity] + (r[col.silenced] ? " (silenced)" : "")));
      var td = el("td");
      td.appendChild(el("a", {"href": "#explain-" + r[col.check_id], "class": "explain-link"}, r[col.check_id]));
      tr.appendChild(td);
      ["cluster", "server", "source"].forEach(function (k) { tr.appendChild(el("td", {}, r[col[k]] || "")); });
      var channel = r[col.channel];
      tr.appendChild(el("td", {}, channel === null ? "" : (channel || "(default)")));
      tr.appendChild(el("td", {}, r[col.title]));
      tr.appendChild(el("td", {"class": "num"}, r[col.gtid_count] === null ? "" : r[col.gtid_count]));
      tr.appendChild(el("td", {}, r[col.first_seen]));
      tr.appendChild(el("td", {}, r[col.status]));
      frag.appendChild(tr);
    });
    tbody.textContent = "";
    tbody.appendChild(frag);
    document.getElementById("filter-count").textContent = matching.length + " of " + data.rows.length + " findings";
    document.getElementById("page-info").textContent = "page " + (page + 1) + " of " + pages;
    document.getElementById("page-prev").disabled = page === 0;
    document.getElementById("page-next").disabled = page >= pages - 1;
  }

  filters.forEach(function (f) { f.addEventListener("change", apply); });
  document.getElementById("page-prev").addEventListener("click", function () { page -= 1; draw(); });
  document.getElementById("page-next").addEventListener("click", function () { page += 1; draw(); });

  // a link to an explanation or a cluster opens it
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("a[href^='#explain-'], a[href^='#cluster-']") : null;
    if (!a) { return; }
    var target = document.getElementById(a.getAttribute("href").slice(1));
    if (target) { target.open = true; }
  });
  apply();
})();
