/* The report's filter: swaps the precomputed figures of the chosen scope into the charts. */
(function () {
  "use strict";

  /* The figure store: JSON, gzip-compressed, in base64 (dashboard/page.py, store_payload). */
  function readStore() {
    if (typeof DecompressionStream === "undefined") {
      return Promise.reject(new Error("this browser cannot unpack the report's data (no DecompressionStream): " +
        "open the file in a current Chrome, Edge, Firefox or Safari"));
    }
    var text = atob(document.getElementById("report-data").textContent.trim());
    var bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) { bytes[i] = text.charCodeAt(i); }
    var json = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(json).json();
  }

  readStore().then(start, function (error) {
    document.getElementById("scope-caption").textContent = String(error.message || error);
    document.body.setAttribute("data-render-error", String(error));
    console.error("report:", error);
  });

  function start(store) {
    var config = { displaylogo: false, responsive: true };
    var workspaceSelect = document.getElementById("workspace");
    var campaignSelect = document.getElementById("campaign");
    var caption = document.getElementById("scope-caption");
    var byWorkspace = {};
    var campaignHome = {};

    store.workspaces.forEach(function (w) {
      byWorkspace[w.id] = w;
      w.campaigns.forEach(function (c) { campaignHome[c.id] = w.id; });
    });

    function option(value, text) {
      var el = document.createElement("option");
      el.value = value;
      el.textContent = text;
      return el;
    }

    function fillWorkspaces() {
      workspaceSelect.appendChild(option("", "All workspaces (" + store.workspaces.length + ")"));
      store.workspaces.forEach(function (w) { workspaceSelect.appendChild(option(w.id, w.name)); });
    }

    function fillCampaigns(workspaceId) {
      campaignSelect.innerHTML = "";
      var shown = workspaceId ? [byWorkspace[workspaceId]] : store.workspaces;
      var count = shown.reduce(function (n, w) { return n + w.campaigns.length; }, 0);
      campaignSelect.appendChild(option("", "All campaigns (" + count + ")"));
      shown.forEach(function (w) {
        var group = document.createElement("optgroup");
        group.label = w.name;
        w.campaigns.forEach(function (c) {
          group.appendChild(option(c.id, c.name + (c.status ? " (" + c.status + ")" : "")));
        });
        campaignSelect.appendChild(group);
      });
    }

    function selection() {
      var campaignId = campaignSelect.value;
      var workspaceId = workspaceSelect.value || (campaignId ? campaignHome[campaignId] : "");
      return { workspaceId: workspaceId, campaignId: campaignId };
    }

    function figureFor(chart, sel) {
      var key = sel.campaignId ? "c:" + sel.campaignId : sel.workspaceId ? "w:" + sel.workspaceId : "all";
      var scope = store.scopes[key] || {};
      if (!scope[chart] && sel.workspaceId) { scope = store.scopes["w:" + sel.workspaceId] || {}; }
      return scope[chart];
    }

    function describe(sel) {
      if (sel.campaignId) {
        var w = byWorkspace[sel.workspaceId];
        var c = w.campaigns.filter(function (x) { return x.id === sel.campaignId; })[0];
        return "campaign " + (c ? c.name : sel.campaignId) + " in " + w.name +
          " (mailbox health and send times: the workspace's)";
      }
      if (sel.workspaceId) { return "workspace " + byWorkspace[sel.workspaceId].name; }
      return "every workspace";
    }

    function render() {
      var sel = selection();
      caption.textContent = "Showing " + describe(sel);
      document.body.setAttribute("data-scope", sel.campaignId ? "c:" + sel.campaignId :
        sel.workspaceId ? "w:" + sel.workspaceId : "all");
      return Promise.all(store.charts.map(function (chart) {
        var el = document.getElementById("chart-" + chart.key);
        var figure = figureFor(chart.key, sel);
        var layout = Object.assign({}, store.base[chart.key], figure.layout);
        layout.template = store.template;
        var data = figure.data.map(function (trace) { return Object.assign({}, trace); });
        return Plotly.react(el, data, layout, config);
      }));
    }

    function saveHash() {
      var sel = selection();
      var parts = [];
      if (workspaceSelect.value) { parts.push("w=" + encodeURIComponent(workspaceSelect.value)); }
      if (sel.campaignId) { parts.push("c=" + encodeURIComponent(sel.campaignId)); }
      history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname);
    }

    function readHash() {
      var params = {};
      location.hash.replace(/^#/, "").split("&").forEach(function (part) {
        var kv = part.split("=");
        if (kv.length === 2) { params[kv[0]] = decodeURIComponent(kv[1]); }
      });
      if (params.w && byWorkspace[params.w]) { workspaceSelect.value = params.w; }
      fillCampaigns(workspaceSelect.value);
      if (params.c && campaignHome[params.c]) { campaignSelect.value = params.c; }
    }

    function rendered(promise) {
      document.body.removeAttribute("data-rendered");
      return promise.then(function () {
        window.reportRenderMs = performance.now();
        document.body.setAttribute("data-rendered", "true");
      }, function (error) {
        document.body.setAttribute("data-render-error", String(error));
        console.error("report: a chart failed to draw:", error);
      });
    }

    workspaceSelect.addEventListener("change", function () {
      fillCampaigns(workspaceSelect.value);
      saveHash();
      rendered(render());
    });
    campaignSelect.addEventListener("change", function () {
      saveHash();
      rendered(render());
    });

    fillWorkspaces();
    readHash();
    rendered(render());
  }
})();
