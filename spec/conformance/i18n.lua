-- The i18n battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.i18n")("memory", function(translations, opts) return i18n end)
--
-- new(translations, opts) returns a fresh zever.i18n (front-end) over the adapter holding the
-- locale trees of translations ({ en = { ... }, fr = { ... } }), default locale "en", with
-- opts passed to the front-end (missing = "raise", ...).

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  local T = {
    en = {
      hello = "Hello %{name}!",
      title = "Inbox",
      users = { title = "Users", empty = "No users" },
      inbox = { one = "%{count} message", other = "%{count} messages" },
      literal = "100% sure, %%{not_a_var}",
      only_en = "English only",
    },
    fr = {
      hello = "Bonjour %{name} !",
      users = { title = "Utilisateurs" },
      inbox = { one = "%{count} message", many = "%{count} de messages", other = "%{count} messages" },
    },
    ru = {
      inbox = { one = "%{count} сообщение", few = "%{count} сообщения", many = "%{count} сообщений",
        other = "%{count} сообщения" },
    },
    ar = {
      inbox = { zero = "لا رسائل", one = "رسالة واحدة", two = "رسالتان", few = "%{count} رسائل",
        many = "%{count} رسالة", other = "%{count} رسالة" },
    },
    pt = { title = "Caixa de entrada" },
    ["pt-BR"] = { users = { title = "Usuários" } },
  }

  -- A request as the front-end sees one: a header method and a locale field to fill.
  local function req(accept_language)
    return { header = function(_, n) if n == "accept-language" then return accept_language end end }
  end

  describe("i18n conformance: " .. name, function()
    it("translates a key with interpolation, for a locale or the default", function()
      local i18n = new(T)
      assert.are.equal("Hello Ann!", i18n:t("en", "hello", { name = "Ann" }))
      assert.are.equal("Bonjour Ann !", i18n:t("fr", "hello", { name = "Ann" }))
      assert.are.equal("Hello Ann!", i18n:t(nil, "hello", { name = "Ann" }))
      assert.are.equal("Users", i18n:t("en", "users.title"))
      assert.are.equal("Hello 42!", i18n:t("en", "hello", { name = 42 }))
      assert.are.equal("Hello %{name}!", i18n:t("en", "hello"))
      assert.are.equal("100% sure, %{not_a_var}", i18n:t("en", "literal", { not_a_var = "x" }))
      i18n:close()
    end)

    it("falls back to the parent locale, then the default locale", function()
      local i18n = new(T)
      assert.are.equal("Usuários", i18n:t("pt-BR", "users.title"))
      assert.are.equal("Usuários", i18n:t("pt_br", "users.title"))
      assert.are.equal("Caixa de entrada", i18n:t("pt-BR", "title"))
      assert.are.equal("English only", i18n:t("fr", "only_en"))
      assert.are.equal("Bonjour X !", i18n:t("fr-CA", "hello", { name = "X" }))
      assert.are.equal("Inbox", i18n:t("de", "title"))
      assert.are.equal("Inbox", i18n:t("not a tag!", "title"))
      i18n:close()
    end)

    it("picks plural forms by the locale's CLDR rule", function()
      local i18n = new(T)
      local function t(l, n) return i18n:t(l, "inbox", { count = n }) end
      assert.are.equal("1 message", t("en", 1))
      assert.are.equal("0 messages", t("en", 0))
      assert.are.equal("2 messages", t("en", 2))
      assert.are.equal("0 message", t("fr", 0))
      assert.are.equal("1.5 message", t("fr", 1.5))
      assert.are.equal("1000000 de messages", t("fr", 1000000))
      assert.are.equal("21 сообщение", t("ru", 21))
      assert.are.equal("3 сообщения", t("ru", 3))
      assert.are.equal("11 сообщений", t("ru", 11))
      assert.are.equal("لا رسائل", t("ar", 0))
      assert.are.equal("رسالتان", t("ar", 2))
      assert.are.equal("5 رسائل", t("ar", 5))
      assert.are.equal("99 رسالة", t("ar", 99))
      assert.are.equal("%{count} messages", i18n:t("en", "inbox"))
      i18n:close()
    end)

    it("negotiates the locale from Accept-Language", function()
      local i18n = new(T)
      local r = req("de-DE, fr;q=0.9, en;q=0.5")
      assert.are.equal("fr", i18n:locale(r))
      assert.are.equal("fr", r.locale)
      assert.are.equal("Utilisateurs", i18n:t(r, "users.title"))
      assert.are.equal("pt-br", i18n:locale(req("pt-BR,pt;q=0.8")))
      assert.are.equal("pt", i18n:locale(req("pt-PT")))
      assert.are.equal("ar", i18n:locale(req("ar-EG")))
      assert.are.equal("en", i18n:locale(req("xx, yy;q=0.5")))
      assert.are.equal("en", i18n:locale(req(nil)))
      assert.are.equal("en", i18n:locale(req("*")))
      assert.are.equal("en", i18n:locale(req(";;;,,q=")))
      local set = req("fr")
      set.locale = "ru"
      assert.are.equal("ru", i18n:locale(set))
      i18n:close()
    end)

    it("returns the key for a missing translation and counts it", function()
      local i18n = new(T)
      assert.are.equal("nope.title", i18n:t("fr", "nope.title"))
      assert.are.equal("nope.title", i18n:t("fr", "nope.title"))
      assert.are.equal("users", i18n:t("en", "users"))
      assert.is_false(i18n:exists("en", "nope.title"))
      assert.is_true(i18n:exists("fr", "only_en"))
      assert.are.same({ { locale = "en", key = "users", count = 1 },
        { locale = "fr", key = "nope.title", count = 2 } }, i18n:missing())
      i18n:close()
    end)

    it("raises on a missing key when asked to, and on misuse", function()
      local i18n = new(T, { missing = "raise" })
      assert.has_error(function() i18n:t("en", "nope") end, "i18n: missing translation en.nope")
      assert.has_error(function() i18n:t("en", 42) end, "i18n:t: key must be a string")
      assert.has_error(function() i18n:t("en", "hello", "x") end, "i18n:t: vars must be a table")
      assert.has_error(function() i18n:t(42, "hello") end)
      assert.is_true(i18n:close())
      assert.are.equal("hello", i18n:t("en", "hello"))
      assert.are.same({}, i18n:locales())
    end)

    it("lists its locales", function()
      local i18n = new(T)
      assert.are.same({ "ar", "en", "fr", "pt", "pt-br", "ru" }, i18n:locales())
      i18n:close()
    end)
  end)
end
