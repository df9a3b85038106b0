-- zever.i18n: the conformance suite over the memory and file adapters, the CLDR plural rules
-- (golden rows from the CLDR 44 charts), the file adapter's folder, and app.i18n in an app.

local i18n_m = require "zever.i18n"
local file_adapter = require "adapters.i18n.file"
local catalog = require "adapters.i18n.catalog"
local json = require "zever.json"
local testing = require "zever.testing"
local files = require "spec.support.files"

describe("zever.i18n", function()
  local dirs = {}
  teardown(function() for _, d in ipairs(dirs) do files.rm_rf(d) end end)
  local function tmp(contents)
    local d = files.tmpdir(contents or {}, "i18n")
    dirs[#dirs + 1] = d
    return d
  end

  require("spec.conformance.i18n")("memory", function(tree, opts)
    opts = opts or {}
    opts.translations = tree
    return i18n_m.new(opts)
  end)

  -- The file adapter: one JSON file per locale, as an app would split them.
  require("spec.conformance.i18n")("file", function(tree, opts)
    local contents = {}
    for locale, t in pairs(tree) do
      contents["locales/" .. locale .. ".json"] = json.encode({ [locale] = t })
    end
    local d = tmp(contents)
    return i18n_m.wrap(assert(file_adapter.new{ dir = d .. "/locales" }), opts)
  end)

  describe("plural rules", function()
    -- { locale, { n = category, ... } } from CLDR's charts (cardinal, integer and decimal rows).
    local ROWS = {
      { "en", { [0] = "other", [1] = "one", [2] = "other", [1.5] = "other" } },
      { "de", { [0] = "other", [1] = "one", [2] = "other" } },
      { "fr", { [0] = "one", [1] = "one", [1.5] = "one", [2] = "other", [1000000] = "many",
        [2000000] = "many", [1000001] = "other" } },
      { "es", { [0] = "other", [1] = "one", [2] = "other", [1000000] = "many" } },
      { "it", { [1] = "one", [2] = "other", [1000000] = "many" } },
      { "pt", { [0] = "one", [1] = "one", [1.5] = "one", [2] = "other", [1000000] = "many" } },
      { "pt-pt", { [0] = "other", [1] = "one", [2] = "other" } },
      { "ru", { [1] = "one", [21] = "one", [101] = "one", [2] = "few", [4] = "few", [22] = "few",
        [0] = "many", [5] = "many", [11] = "many", [12] = "many", [14] = "many", [111] = "many",
        [1.5] = "other" } },
      { "uk", { [1] = "one", [3] = "few", [11] = "many", [0.5] = "other" } },
      { "pl", { [1] = "one", [2] = "few", [24] = "few", [0] = "many", [5] = "many", [12] = "many",
        [21] = "many", [22] = "few", [112] = "many", [1.5] = "other" } },
      { "cs", { [1] = "one", [2] = "few", [4] = "few", [5] = "other", [0] = "other", [1.5] = "many" } },
      { "ar", { [0] = "zero", [1] = "one", [2] = "two", [3] = "few", [10] = "few", [103] = "few",
        [11] = "many", [99] = "many", [111] = "many", [100] = "other", [102] = "other",
        [0.5] = "other" } },
      { "ja", { [0] = "other", [1] = "other", [2] = "other" } },
      { "zh", { [1] = "other", [100] = "other" } },
      { "zh-hant", { [1] = "other" } },
      { "en-gb", { [1] = "one", [2] = "other" } },
    }
    for _, row in ipairs(ROWS) do
      it("gives " .. row[1] .. " its CLDR categories", function()
        for n, want in pairs(row[2]) do
          assert.are.equal(want, catalog.plural(row[1], n), row[1] .. " " .. n)
          assert.are.equal(want, i18n_m.plural(row[1], -n), row[1] .. " -" .. n)
        end
      end)
    end
  end)

  describe("catalogue", function()
    it("compiles placeholders into parts and leaves plain text a string", function()
      for _, row in ipairs{
        { "plain", "plain" },
        { "a %{x} b", { "a ", "x", " b" } },
        { "%{x}%{y}", { "", "x", "", "y", "" } },
        { "%%{x}", "%{x}" },
        { "50%% off %{x}", { "50%% off ", "x", "" } },
        { "%{bad name}", "%{bad name}" },
      } do
        assert.are.same(row[2], catalog.compile_message(row[1]), row[1])
      end
    end)

    it("refuses bad trees with the file and key named", function()
      for _, row in ipairs{
        { { en = { a = { 1, 2 } } }, '"a" must be text' },
        { { ["no tag!"] = {} }, "is not a language tag" },
        { { en = { n = { one = "x", other = 5 } } }, 'the plural form "other" must be text' },
      } do
        local cat, err = catalog.compile({ { tree = row[1], where = "x.yaml" } })
        assert.is_nil(cat)
        assert.matches(row[2], err, 1, true)
        assert.matches("x.yaml", err, 1, true)
      end
      local cat, err = catalog.compile({ { tree = { en = { a = "1" } }, where = "a.yaml" },
        { tree = { en = { a = "2" } }, where = "b.yaml" } })
      assert.is_nil(cat)
      assert.matches('b.yaml: en: the key "a" is defined twice', err, 1, true)
    end)
  end)

  describe("file adapter", function()
    it("reads YAML files of several locales and merges files of one locale", function()
      local d = tmp{
        ["locales/en.yml"] = "en:\n  hello: \"Hello %{name}\"\n  inbox:\n    one: \"%{count} item\"\n" ..
          "    other: \"%{count} items\"\n",
        ["locales/users.en.yaml"] = "en:\n  users:\n    title: Users\n",
        ["locales/de.yaml"] = "de:\n  hello: \"Hallo %{name}\"\n",
        ["locales/README.txt"] = "not read",
      }
      local i18n = i18n_m.wrap(assert(file_adapter.new{ dir = d .. "/locales" }))
      assert.are.equal("Hallo Bo", i18n:t("de", "hello", { name = "Bo" }))
      assert.are.equal("Users", i18n:t("de", "users.title"))
      assert.are.equal("3 items", i18n:t("en", "inbox", { count = 3 }))
      assert.are.same({ "de", "en" }, i18n:locales())
      assert.are.equal(3, i18n:stats().files)
      i18n:close()
    end)

    it("has no translations without the folder, and refuses a broken file", function()
      local d = tmp{ ["locales/en.yaml"] = "en:\n  a: [1,\n" }
      local i18n = i18n_m.wrap(assert(file_adapter.new{ dir = d .. "/none" }))
      assert.are.equal("x", i18n:t("en", "x"))
      local impl, err = file_adapter.new{ dir = d .. "/locales" }
      assert.is_nil(impl)
      assert.are.equal("invalid", err.code)
      assert.matches("en.yaml", err.message, 1, true)
    end)
  end)

  describe("missing keys in development", function()
    it("logs one warning per locale and key through the log battery", function()
      local d = tmp()
      local out = assert(io.open(d .. "/log.jsonl", "w"))
      local logger = require("zever.log").new{ format = "json", out = out }
      local i18n = i18n_m.new{ translations = { en = { a = "A" } }, missing = "log", log = logger }
      assert.are.equal("nope", i18n:t("en", "nope"))
      assert.are.equal("nope", i18n:t("en", "nope"))
      assert.are.equal("other", i18n:t("fr", "other"))
      out:close()
      local lines = {}
      for line in io.lines(d .. "/log.jsonl") do lines[#lines + 1] = json.decode(line) end
      assert.are.equal(2, #lines)
      assert.are.same({ "warn", "i18n: missing translation", "en", "nope" },
        { lines[1].level, lines[1].msg, lines[1].locale, lines[1].key })
      assert.are.equal(2, i18n:missing()[1].count)
    end)

    it("takes its reporter and the log battery from the config section", function()
      local wrap_config = i18n_m.wrap_config
      local impl = require("adapters.i18n.memory").new{}
      local logged = {}
      local ctx = { get = function(_, name)
        assert.are.equal("log", name)
        return { warn = function(_, _, f) logged[#logged + 1] = f.key end }
      end }
      local i18n = wrap_config(impl, { missing = "log" }, ctx)
      i18n:t("en", "k")
      assert.are.same({ "k" }, logged)
      assert.are.equal("ignore", wrap_config(impl, { missing = "ignore" }, ctx).report)
    end)
  end)

  describe("app.i18n", function()
    local APP = [[
local zever = require "zever"
local app = zever.app()
app:use(app.i18n:middleware())
app:get("/hi", function(req) return app.i18n:t(req, "hello", { name = req.query.name }) end)
app:get("/inbox", function(req)
  return app.i18n:t(req, "inbox", { count = tonumber(req.query.n) })
end)
return app
]]

    it("negotiates per request and sets Content-Language", function()
      local d = tmp{ ["app.lua"] = APP,
        ["locales/en.yaml"] = "en:\n  hello: \"Hello %{name}\"\n  inbox:\n    one: \"%{count} message\"\n" ..
          "    other: \"%{count} messages\"\n",
        ["locales/pl.yaml"] = "pl:\n  hello: \"Cześć %{name}\"\n  inbox:\n    one: \"%{count} wiadomość\"\n" ..
          "    few: \"%{count} wiadomości\"\n    many: \"%{count} wiadomości\"\n" ..
          "    other: \"%{count} wiadomości\"\n" }
      local t = testing.app(d)
      local res = t:get("/hi?name=Ola", { headers = { ["accept-language"] = "pl-PL,pl;q=0.9,en;q=0.8" } })
      assert.are.equal(200, res.status)
      assert.are.equal("Cześć Ola", res.body)
      assert.are.equal("pl", res.headers["content-language"])
      res = t:get("/hi?name=Ann", { headers = { ["accept-language"] = "ja" } })
      assert.are.equal("Hello Ann", res.body)
      assert.are.equal("en", res.headers["content-language"])
      assert.are.equal("1 message", t:get("/inbox?n=1").body)
      assert.are.equal("5 wiadomości",
        t:get("/inbox?n=5", { headers = { ["accept-language"] = "pl" } }).body)
      t:close()
    end)
  end)
end)
