-- zever.request.negotiate: content negotiation on a request: req:accepts(...),
-- req:accepts_language(...), req:accepts_encoding(...) and req:is(...) (docs/negotiation.md;
-- the grammars are LPeg, in zever.accept). zever.request installs them on its first request that
-- calls one (docs/app.md, "Start-up heap").
--
-- It must not require zever.request (the require graph has no cycles).

local accept = require "zever.accept"

local rawget, rawset = rawget, rawset
local type, select, ipairs = type, select, ipairs

local M = {}

-- Installs the methods into Request (zever.request's metatable).
function M.install(Request)
  local function offers_of(name, ...)
    local n = select("#", ...)
    local offers = ...
    if n ~= 1 or type(offers) ~= "table" then offers = { ... } end
    for i = 1, #offers do
      if type(offers[i]) ~= "string" then error(name .. ": offers must be strings", 3) end
    end
    return offers
  end

  -- The parsed Accept-family header, cached on the request.
  local function parsed(req, key, header, parse)
    local v = rawget(req, key)
    if v == nil then
      v = parse(req.source:header(header))
      rawset(req, key, v)
    end
    return v
  end

  function Request:accepts(...)
    local ranges = parsed(self, "_accept", "accept", accept.media)
    if select("#", ...) == 0 then
      local out = {}
      for i, r in ipairs(accept.ordered(ranges)) do
        if r.q > 0 then out[#out + 1] = r.type .. "/" .. r.subtype end
        if i > 100 then break end
      end
      return out
    end
    local offers = offers_of("req:accepts", ...)
    if not self.source:header("accept") then return offers[1] end -- no header: anything goes
    return accept.best_media(ranges, offers)
  end

  function Request:accepts_language(...)
    local offers = offers_of("req:accepts_language", ...)
    if not self.source:header("accept-language") then return offers[1] end
    return accept.best_language(parsed(self, "_accept_language", "accept-language", accept.tokens),
      offers)
  end

  function Request:accepts_encoding(...)
    local offers = offers_of("req:accepts_encoding", ...)
    local present = self.source:header("accept-encoding") ~= nil
    return accept.best_encoding(parsed(self, "_accept_encoding", "accept-encoding", accept.tokens),
      offers, present)
  end

  -- Whether the request's body is of one of the offered types ("json" also matches any
  -- "+json" type, "text/*" any text): the offer that matched, false, or nil without a body type.
  function Request:is(...)
    local offers = offers_of("req:is", ...)
    local t, s = accept.content_type(self.source:header("content-type"))
    if not t then
      if self.source:header("content-type") then return false end
      return nil
    end
    for _, offer in ipairs(offers) do
      local ot, os_ = accept.offer_type(offer)
      if ot and (ot == "*" or ot == t) and (os_ == "*" or os_ == s
        or (os_ ~= "*" and s:sub(-#os_ - 1) == "+" .. os_)) then
        return offer
      end
    end
    return false
  end
end

return M
