-- zever.dashboard_page: the page of the /_zever dashboard (zever.dashboard serves it): one HTML
-- document with its CSS and JS inline, so it works offline and without any CDN. The script
-- reads the JSON API under <base>/api/ and fills the tables with textContent (never innerHTML:
-- route names, paths and job errors are data, not markup). A ?token= in the page's address is
-- sent on as Authorization: Bearer to the API.
--
--   page.html(base) -> the document (base: the dashboard's path, "/_zever")

-- luacheck: no max line length (the page's markup and script are long string lines)
local M = {}

local PAGE = [==[<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>zever dashboard</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:10px 20px;display:flex;gap:20px;align-items:baseline}
header h1{font-size:18px;margin:0}main{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:16px;padding:16px}
section{background:#fff;border-radius:6px;padding:12px 16px;box-shadow:0 1px 2px #0002;overflow:auto}
h2{font-size:15px;margin:0 0 8px}table{border-collapse:collapse;width:100%}
td,th{text-align:left;padding:3px 8px;border-bottom:1px solid #eee;font-variant-numeric:tabular-nums}
.ok{color:#17803d}.fail,.timeout{color:#b42318}.muted{color:#777}button{cursor:pointer}
</style></head><body>
<header><h1>zever</h1><span id="overview" class="muted">loading...</span></header>
<main>
<section id="routes-section"><h2>Routes</h2><table id="routes"><thead><tr><th>method</th><th>pattern</th><th>name</th><th>handler</th></tr></thead><tbody></tbody></table></section>
<section id="health-section"><h2>Batteries</h2><table id="health"><thead><tr><th>battery</th><th>adapter</th><th>status</th><th>ms</th></tr></thead><tbody></tbody></table></section>
<section id="queues-section"><h2>Queues</h2><table id="queues"><thead><tr><th>queue</th><th>waiting</th><th>jobs</th></tr></thead><tbody></tbody></table></section>
<section id="failed-section"><h2>Failed jobs</h2><table id="failed"><thead><tr><th>id</th><th>job</th><th>queue</th><th>attempts</th><th>error</th><th></th></tr></thead><tbody></tbody></table><p id="failed-status" class="muted"></p></section>
<section id="workflows-section"><h2>Workflows</h2><table id="workflows"><thead><tr><th>id</th><th>workflow</th><th>status</th><th>attempts</th><th>error</th><th></th></tr></thead><tbody></tbody></table><p id="workflows-status" class="muted"></p></section>
<section id="breakers-section"><h2>Circuit breakers</h2><table id="breakers"><thead><tr><th>name</th><th>state</th><th>calls</th><th>failures</th><th>slow</th><th>rejected</th><th>opened</th></tr></thead><tbody></tbody></table></section>
<section id="requests-section"><h2>Recent requests (this worker)</h2><table id="requests"><thead><tr><th>method</th><th>path</th><th>status</th><th>ms</th></tr></thead><tbody></tbody></table></section>
<section id="metrics-section"><h2>Metrics</h2><table id="metrics"><thead><tr><th>name</th><th>labels</th><th>value</th></tr></thead><tbody></tbody></table></section>
</main>
<script>
(function () {
  "use strict";
  var BASE = "@BASE@";
  var token = new URLSearchParams(location.search).get("token");
  function api(path, opts) {
    opts = opts || {};
    opts.headers = opts.headers || {};
    if (token) opts.headers["Authorization"] = "Bearer " + token;
    return fetch(BASE + "/api/" + path, opts).then(function (r) {
      if (!r.ok) throw new Error(path + ": " + r.status);
      return r.json();
    });
  }
  function fill(id, rows, cells) {
    var body = document.querySelector("#" + id + " tbody");
    body.textContent = "";
    rows.forEach(function (row) {
      var tr = document.createElement("tr");
      cells(row).forEach(function (c) {
        var td = document.createElement("td");
        if (c instanceof Node) td.appendChild(c); else td.textContent = c == null ? "" : String(c);
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    document.getElementById(id).setAttribute("data-loaded", String(rows.length));
  }
  function labels(l) {
    return Object.keys(l).sort().map(function (k) { return k + "=" + l[k]; }).join(", ");
  }
  function retry(id) {
    var st = document.getElementById("failed-status");
    api("failed/retry", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ id: id }) }).then(function (r) {
      st.textContent = "retried " + r.retried;
      st.setAttribute("data-retried", String(r.retried));
      return load();
    }).catch(function (e) { st.textContent = String(e); });
  }
  function wfRetry(id) {
    var st = document.getElementById("workflows-status");
    api("workflows/retry", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ id: id }) }).then(function (r) {
      st.textContent = "retrying " + r.retried;
      return load();
    }).catch(function (e) { st.textContent = String(e); });
  }
  function load() {
    return Promise.all([
      api("overview").then(function (o) {
        document.getElementById("overview").textContent = o.app + " \u00b7 " +
          (o.environment || "no environment") + " \u00b7 " + o.routes + " routes \u00b7 up " + o.uptime + " s";
      }),
      api("routes").then(function (r) {
        fill("routes", r.routes, function (x) { return [x.method, x.pattern, x.name, x.source]; });
      }),
      api("health").then(function (h) {
        fill("health", h.batteries, function (b) {
          var s = document.createElement("span");
          s.className = b.status; s.textContent = b.status + (b.error ? " (" + b.error + ")" : "");
          return [b.battery, b.adapter, s, b.ms];
        });
      }),
      api("queues").then(function (q) {
        fill("queues", q.queues, function (x) { return [x.queue, x.waiting, x.jobs.join(", ")]; });
      }),
      api("failed").then(function (f) {
        fill("failed", f.failed, function (x) {
          var b = document.createElement("button");
          b.textContent = "retry"; b.className = "retry"; b.setAttribute("data-id", String(x.id));
          b.addEventListener("click", function () { retry(x.id); });
          return [x.id, x.name, x.queue, x.attempts, x.error, b];
        });
      }),
      api("workflows").then(function (w) {
        fill("workflows", w.workflows, function (x) {
          var b = "";
          if (x.status === "stuck") {
            b = document.createElement("button");
            b.textContent = "retry"; b.className = "wf-retry"; b.setAttribute("data-id", x.id);
            b.addEventListener("click", function () { wfRetry(x.id); });
          }
          return [x.id, x.name, x.status, x.attempts, x.error, b];
        });
      }),
      api("breakers").then(function (b) {
        fill("breakers", b.breakers, function (x) {
          return [x.name, x.state, x.calls, x.failures, x.slow, x.rejected, x.opened];
        });
      }),
      api("requests").then(function (r) {
        fill("requests", r.requests, function (x) { return [x.method, x.path, x.status, x.ms]; });
      }),
      api("metrics").then(function (m) {
        fill("metrics", m.samples.slice(0, 200), function (s) { return [s.name, labels(s.labels), s.value]; });
      })
    ]).then(function () {
      document.body.setAttribute("data-ready", "1");
    }).catch(function (e) {
      document.getElementById("overview").textContent = "error: " + e.message;
      document.body.setAttribute("data-error", e.message);
    });
  }
  window.zeverDashboard = { load: load, retry: retry };
  load();
})();
</script>
</body></html>
]==]

function M.html(base)
  -- base is the app's own configured path; it lands in a JS string: keep it to a safe alphabet.
  if type(base) ~= "string" or not base:match("^/[%w_%-/]*$") then
    error("dashboard: path must be /[A-Za-z0-9_-/]*", 2)
  end
  return (PAGE:gsub("@BASE@", base))
end

return M
