-- The geo battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.geo")("static", function(data) return geo end)
--
-- new(data) returns a fresh zever.geo over the adapter holding data ({ places, networks }, the
-- static file's shape).

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  local DATA = {
    places = {
      { name = "Paris", lat = 48.8566, lon = 2.3522, country = "FR" },
      { name = "London", lat = 51.5074, lon = -0.1278, country = "GB" },
      { name = "Berlin", lat = 52.52, lon = 13.405, country = "DE" },
      { name = "New York", lat = 40.7128, lon = -74.006, country = "US" },
    },
    networks = {
      { cidr = "203.0.113.0/24", country = "FR", city = "Paris" },
      { cidr = "203.0.113.128/25", country = "FR", city = "Lyon" },
      { cidr = "198.51.100.0/22", country = "US" },
    },
  }

  describe("geo conformance: " .. name, function()
    it("finds places by name and measures distances between them", function()
      local g = new(DATA)
      assert.are.equal("GB", g:place("london").country)
      assert.is_nil(g:place("Atlantis"))
      local d = assert(g:distance("Paris", "London"))
      assert.is_true(math.abs(d - 343.5e3) < 2e3, d)          -- 343.5 km great-circle
      assert.is_true(math.abs(g:distance("Paris", { 48.8566, 2.3522 })) < 1e-6)
      assert.are.equal("not_found", select(2, g:distance("Paris", "Atlantis")).code)
      g:close()
    end)

    it("ranks the nearest places and those within a radius", function()
      local g = new(DATA)
      local near = g:nearest(50.85, 4.35, 2)                   -- Brussels
      assert.are.same({ "Paris", "London" }, { near[1].place.name, near[2].place.name })
      local within = g:within(48.8566, 2.3522, 400e3)
      assert.are.equal(2, #within)
      assert.are.equal(0, math.floor(within[1].distance))
      g:close()
    end)

    it("locates IPv4 addresses by the longest matching prefix", function()
      local g = new(DATA)
      assert.are.equal("Paris", g:locate("203.0.113.5").city)
      assert.are.equal("Lyon", g:locate("203.0.113.200").city)
      assert.are.equal("US", g:locate("198.51.103.255").country)
      assert.is_nil(g:locate("198.51.104.0"))
      assert.is_nil(g:locate("not an ip"))
      assert.is_nil(g:locate("300.1.1.1"))
      assert.has_error(function() g:nearest(91, 0) end, "geo:nearest: latitude must be a number in -90..90")
      assert.is_true(g:close())
    end)
  end)
end
