-- zever.flag: the conformance suite over the memory and file adapters, the file adapter's
-- reload (on a real file, through inotify), the rollout hash, and app.flag from the config.

local flag = require "zever.flag"
local rules = require "adapters.flag.rules"
local file_adapter = require "adapters.flag.file"
local container = require "zever.container"
local config = require "zever.config"
local json = require "zever.json"
local sched = require "zever.sched"
local files = require "spec.support.files"

-- A flag tree as YAML text (flat enough for the specs' trees: JSON is YAML).
local function yaml_of(tree) return json.encode(tree) end

describe("zever.flag", function()
  require("spec.conformance.flag")("memory", function(tree) return flag.new{ flags = tree } end)

  local dirs = {}
  teardown(function() for _, d in ipairs(dirs) do files.rm_rf(d) end end)
  local function tmp(contents)
    local d = files.tmpdir(contents or {}, "flag")
    dirs[#dirs + 1] = d
    return d
  end

  require("spec.conformance.flag")("file (yaml)", function(tree)
    local d = tmp{ ["flags.yaml"] = yaml_of(tree) }
    return flag.wrap(assert(file_adapter.new{ file = d .. "/flags.yaml", watch = false }))
  end)
  require("spec.conformance.flag")("file (json)", function(tree)
    local d = tmp{ ["flags.json"] = json.encode(tree) }
    return flag.wrap(assert(file_adapter.new{ file = d .. "/flags.json", watch = false }))
  end)

  describe("rules", function()
    it("hashes with FNV-1a 32 (golden rows from the FNV reference)", function()
      for _, row in ipairs{ { "", 0x811c9dc5 }, { "a", 0xe40c292c }, { "foobar", 0xbf9cf968 },
        { "b", 0xe70c2de5 } } do
        assert.are.equal(row[2], rules.fnv1a32(row[1]), row[1])
      end
    end)

    it("keeps the MurmurHash3 finaliser's known values", function()
      assert.are.equal(0, rules.fmix32(0))
      assert.are.equal(0x514e28b7, rules.fmix32(1))
    end)

    it("computes the same bucket in C (FFI and classic binding) as the Lua reference", function()
      local core = require "zever.flag_core"
      assert.are_not.equal(rules.bucket, rules.bucket_lua)   -- the host exports the symbol
      for i = 1, 10000 do
        local name, key = "flag" .. (i % 7), "key-" .. i .. ("\0x"):rep(i % 3)
        local want = rules.bucket_lua(name, key)
        assert.are.equal(want, rules.bucket(name, key))
        assert.are.equal(want, core.bucket(name, key))
      end
      assert.are.equal(rules.bucket_lua("", ""), rules.bucket("", ""))
    end)

    it("spreads 100k keys within bounds at every rollout step", function()
      local N = 100000
      local hist = {}
      for b = 0, 99 do hist[b] = 0 end
      for i = 1, N do
        local b = flag.bucket("new_checkout", "user-" .. i)
        assert.is_true(b >= 0 and b < 10000 and b % 1 == 0)
        hist[math.floor(b / 100)] = hist[math.floor(b / 100)] + 1
      end
      -- Each percent of buckets holds 1000 keys on average (sd ~31.5): 6 sd either way.
      local chi = 0
      for b = 0, 99 do
        assert.is_true(hist[b] > 810 and hist[b] < 1190, "percent " .. b .. ": " .. hist[b])
        chi = chi + (hist[b] - 1000) ^ 2 / 1000
      end
      -- 99 degrees of freedom: chi-square above 160 has p < 1e-4.
      assert.is_true(chi < 160, "chi-square " .. chi)
      -- Cumulative shares: a 10 / 50 / 90 % rollout lands within 1 point of its target.
      local acc = 0
      for b = 0, 99 do
        acc = acc + hist[b]
        if b == 9 or b == 49 or b == 89 then
          local want = (b + 1) / 100 * N
          assert.is_true(math.abs(acc - want) < N / 100, (b + 1) .. "%: " .. acc)
        end
      end
    end)

    it("gives each flag its own buckets for the same keys", function()
      local same = 0
      for i = 1, 1000 do
        if (flag.bucket("a", "k" .. i) < 5000) == (flag.bucket("b", "k" .. i) < 5000) then
          same = same + 1
        end
      end
      assert.is_true(same > 400 and same < 600, "agreement " .. same)
    end)

    it("refuses flags it cannot read with the flag named", function()
      for _, row in ipairs{
        { { x = { rollout = 20, value = "s" } }, 'flag "x": rollout needs a boolean value' },
        { { x = { rollout = 120 } }, "percentage from 0 to 100" },
        { { x = { value = 1, tenants = { a = "s" } } }, 'tenant "a"' },
        { { x = { value = true, colour = 1 } }, 'unknown field "colour"' },
        { { "a", "b" }, "must map flag names" },
      } do
        local flags, err = rules.compile(row[1], "f.yaml")
        assert.is_nil(flags)
        assert.matches(row[2], err, 1, true)
      end
    end)
  end)

  describe("file adapter", function()
    it("refuses to open a file that is missing or invalid, naming the line", function()
      local d = tmp{ ["bad.yaml"] = "a: true\nb: [1, 2\n" }
      local impl, err = file_adapter.new{ file = d .. "/missing.yaml" }
      assert.is_nil(impl)
      assert.are.equal("invalid", err.code)
      impl, err = file_adapter.new{ file = d .. "/bad.yaml" }
      assert.is_nil(impl)
      assert.matches("bad.yaml", err.message, 1, true)
    end)

    it("has no flags without a file: every getter falls back", function()
      local flags = flag.wrap(assert(file_adapter.new{ file = "" }))
      assert.are.equal("fb", flags:string("x", "fb"))
      assert.is_true(flags:reload())
      flags:close()
    end)

    it("reloads when the file changes, and keeps its flags through a broken edit", function()
      local d = tmp{ ["flags.yaml"] = "beta: false\nlimit: 1\n" }
      local path = d .. "/flags.yaml"
      local flags = flag.wrap(assert(file_adapter.new{ file = path }))
      assert.is_false(flags:bool("beta", true))
      files.write(path, "beta: true\nlimit: 2\n")
      assert.is_true(sched.wait_until(function() return flags:int("limit", 0) == 2 end, 10))
      assert.is_true(flags:bool("beta", false))
      -- A broken edit: the old flags stay and the failure is counted.
      files.write(path, "beta: [\n")
      assert.is_true(sched.wait_until(function() return flags:stats().failed_reloads > 0 end, 10))
      assert.are.equal(2, flags:int("limit", 0))
      assert.matches("flags.yaml", flags:stats().last_error, 1, true)
      -- An editor's save: a new file renamed over the old one.
      files.write(d .. "/flags.yaml.tmp", "limit: 3\n")
      assert(os.rename(d .. "/flags.yaml.tmp", path))
      assert.is_true(sched.wait_until(function() return flags:int("limit", 0) == 3 end, 10))
      assert.is_nil(flags:stats().last_error)
      flags:close()
    end)

    it("reads the file again on reload() when it is not watched", function()
      local d = tmp{ ["flags.json"] = '{"limit": 1}' }
      local flags = flag.wrap(assert(file_adapter.new{ file = d .. "/flags.json", watch = false }))
      files.write(d .. "/flags.json", '{"limit": 5}')
      assert.are.equal(1, flags:int("limit", 0))
      assert.is_true(flags:reload())
      assert.are.equal(5, flags:int("limit", 0))
      files.write(d .. "/flags.json", '{"limit": ')
      local ok, err = flags:reload()
      assert.is_nil(ok)
      assert.are.equal("invalid", err.code)
      assert.are.equal(5, flags:int("limit", 0))
      flags:close()
    end)
  end)

  describe("app.flag", function()
    it("opens the file FLAG_FILE names, relative to the app folder", function()
      local d = tmp{ ["config/flags.yaml"] = "beta:\n  value: true\n  tenants:\n    acme: false\n" }
      local cfg = assert(config.load{ dir = d, env = { FLAG_FILE = "config/flags.yaml" } })
      assert.are.equal(d .. "/config/flags.yaml", cfg.flag.file)
      local c = container.new(cfg)
      local flags = assert(c:get("flag"))
      assert.is_true(flags:bool("beta", false))
      assert.is_false(flags:bool("beta", true, { tenant = "acme" }))
      assert.is_true(c:close())
    end)

    it("fails to resolve when the configured file is broken", function()
      local d = tmp{ ["flags.yaml"] = "beta: {rollout: 900}\n" }
      local cfg = assert(config.load{ dir = d, env = { FLAG_FILE = "flags.yaml" } })
      local c = container.new(cfg)
      local flags, err = c:get("flag")
      assert.is_nil(flags)
      assert.matches("percentage", tostring(err), 1, true)
      c:close()
    end)
  end)
end)
