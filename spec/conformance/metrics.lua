-- The metrics battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.metrics")("prometheus", function() return metrics end,
--                                        { records = true })
--
-- new() returns a fresh zever.metrics (front-end) over the adapter, on a registry of its own.
-- records: the adapter keeps values (the noop adapter does not: its values stay 0 and its
-- exposition holds no family of its own).

local exposition = require "spec.support.exposition"

return function(name, new, opts)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert
  local records = opts and opts.records

  describe("metrics conformance: " .. name, function()
    it("counts a counter's increments per label values", function()
      local m = new()
      local c = assert(m:counter("conf_orders_total", "Orders.", { "plan" }))
      c:labels("pro"):inc()
      c:labels("pro"):inc(2)
      c:labels("free"):inc()
      assert.are.equal(records and 3 or 0, c:value("pro"))
      assert.are.equal(records and 1 or 0, c:value("free"))
    end)

    it("sets, increments and decrements a gauge", function()
      local m = new()
      local g = assert(m:gauge("conf_depth", "Depth."))
      g:set(5)
      g:inc()
      g:dec(2)
      assert.are.equal(records and 4 or 0, g:value())
    end)

    it("puts observations into the first bucket whose bound is >= the value", function()
      local m = new()
      local h = assert(m:histogram("conf_seconds", "Time.", nil, { 0.1, 1 }))
      for _, v in ipairs({ 0.05, 0.1, 0.5, 3 }) do h:observe(v) end
      local v = h:value()
      if records then
        assert.are.same({ [0.1] = 2, [1] = 3, [math.huge] = 4 }, v.buckets)
        assert.are.equal(4, v.count)
        assert.is_true(math.abs(v.sum - 3.65) < 1e-9)
      else
        assert.are.equal(0, v.count)
      end
    end)

    it("raises on misuse, blaming the caller", function()
      local m = new()
      local c = assert(m:counter("conf_misuse_total", "x", { "a" }))
      assert.has_error(function() c:labels() end, "metrics: conf_misuse_total has 1 label(s) (a), got 0 value(s)")
      assert.has_error(function() c:labels("x"):inc(-1) end, "metrics: a counter's inc takes a number >= 0")
      assert.has_error(function() c:inc() end)
      assert.has_error(function() m:counter(42) end, "metrics:counter: name must be a string")
      assert.has_error(function() m:histogram("conf_h", "x", nil, { 1, 1 }) end,
        "metrics:histogram: buckets must be finite numbers in increasing order")
      assert.has_error(function() m:render("xml") end)
    end)

    it("renders Prometheus text and OpenMetrics that parse strictly", function()
      local m = new()
      local c = assert(m:counter("conf_render_total", "Rendered \"things\".", { "k" }))
      c:labels('a"b\\c\nd'):inc(7)
      assert(m:histogram("conf_render_seconds", "Time.", { "k" }, { 0.5 })):labels("x"):observe(1)
      m:collect("conf_collected", "Read at scrape.", "gauge", function()
        return { { labels = { q = "default" }, value = 3 } }
      end)
      local text, ctype = m:render()
      assert.are.equal("text/plain; version=0.0.4; charset=utf-8", ctype)
      local fams = assert(exposition.parse(text, "prometheus"))
      assert.are.equal(3, fams.conf_collected.samples[1].value)
      local om, octype = m:render("openmetrics")
      assert.are.equal("application/openmetrics-text; version=1.0.0; charset=utf-8", octype)
      local ofams = assert(exposition.parse(om, "openmetrics"))
      assert.is_not_nil(ofams.conf_collected)
      if records then
        local s = fams.conf_render_total.samples[1]
        assert.are.equal('a"b\\c\nd', s.labels.k)
        assert.are.equal(7, s.value)
        assert.are.equal("counter", ofams.conf_render.type)
        assert.are.equal(7, ofams.conf_render.samples[1].value)
        assert.are.equal("histogram", fams.conf_render_seconds.type)
      end
    end)

    it("returns the same family for the same declaration and conflict for another", function()
      local m = new()
      local a = assert(m:counter("conf_same_total", "x", { "a" }))
      assert.are.equal(a, m:counter("conf_same_total", "x", { "a" }))
      if records then
        local g, err = m:gauge("conf_same_total", "x", { "a" })
        assert.is_nil(g)
        assert.are.equal("conflict", err.code)
        assert.are.equal("metrics", err.battery)
      end
    end)

    it("returns closed after close", function()
      local m = new()
      assert.is_true(m:close())
      local c, err = m:counter("conf_closed_total", "x")
      assert.is_nil(c)
      assert.are.equal("closed", err.code)
      local t, err2 = m:render()
      assert.is_nil(t)
      assert.are.equal("closed", err2.code)
      assert.is_true(m:close())
    end)
  end)
end
