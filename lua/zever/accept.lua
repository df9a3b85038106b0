-- zever.accept: the grammars of Accept, Accept-Language, Accept-Encoding and Content-Type
-- (RFC 9110 §12.5, §8.3; RFC 4647 basic filtering), written with LPeg, and the choice of the
-- best offer. zever.request's accepts, accepts_language, accepts_encoding and is use it.
--
--   accept.media(value)     -> { { type, subtype, params = {k = v}, q, i }, ... }
--   accept.tokens(value)    -> { { value, q, i }, ... }     (languages, codings)
--   accept.content_type(v)  -> type, subtype, params | nil  (a request's Content-Type)
--   accept.best_media(ranges, offers) / best_language / best_encoding -> offer | nil
--
-- An element that does not parse is skipped, never the whole header (a browser's odd entry
-- must not turn negotiation off); q is in thousandths (0..1000), and q=0 means "not
-- acceptable". Parsing allocates the result tables only; the grammars are built once.

local lpeg = require "lpeg"

local P, R, S, C, Ct, Cg, Cc, Cf = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Ct, lpeg.Cg, lpeg.Cc,
  lpeg.Cf
local lower, sort, ipairs, pairs, type, tonumber, floor = string.lower, table.sort, ipairs, pairs,
  type, tonumber, math.floor

local M = {}

-- --- the grammar -------------------------------------------------------------------------------

local OWS = S(" \t") ^ 0
local tchar = R("az", "AZ", "09") + S("!#$%&'*+-.^_`|~")
local token = tchar ^ 1
local qdtext = P(1) - S('"\\')
local quoted = P('"') * Cf(Cc("") * (C(qdtext ^ 1) + P("\\") * C(1)) ^ 0,
  function(a, b) return a .. b end) * P('"')
-- q = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), in thousandths.
local qvalue = (C(P("0") * (P(".") * R("09") ^ -3) ^ -1) + C(P("1") * (P(".") * P("0") ^ -3) ^ -1))
  / function(s) return floor(tonumber(s) * 1000 + 0.5) end
local weight = OWS * P(";") * OWS * S("qQ") * P("=") * qvalue
local param = OWS * P(";") * OWS * Cg(C(token) / lower * P("=") * (C(token) + quoted))
local qname = OWS * P(";") * OWS * S("qQ") * P("=")
local params = Cf(Ct("") * (param - qname) ^ 0, function(t, k, v)
  t[k] = v
  return t
end)
local ext = (OWS * P(";") * OWS * token * (P("=") * (token + quoted)) ^ -1) ^ 0 -- after q: ignored
local sep = OWS * P(",")
local finish = OWS * (sep + P(-1))

-- media-range [params] [weight [ext]]
local media_range = Ct(Cg(C(token) / lower, "type") * P("/") * Cg(C(token) / lower, "subtype")
  * Cg(params, "params") * (Cg(weight, "q") * ext) ^ -1) * #finish
-- language-range or coding, [weight]
local token_q = Ct(Cg(C(token) / lower, "value") * (Cg(weight, "q") * ext) ^ -1) * #finish
local skip = (P(1) - P(",")) ^ 0

local function list_of(elem)
  local element = OWS * (elem + skip * Cc(false))
  return Ct(element * (OWS * P(",") * element) ^ 0) * OWS * P(-1)
end

local media_list = list_of(media_range)
local token_list = list_of(token_q)
local content_type = Ct(Cg(C(token) / lower, "type") * P("/") * Cg(C(token) / lower, "subtype")
  * Cg(params, "params")) * OWS * P(-1)

local function clean(list)
  local out = {}
  for _, e in ipairs(list or {}) do
    if e then
      e.q = e.q or 1000
      e.i = #out + 1
      out[#out + 1] = e
    end
  end
  return out
end

function M.media(value)
  if type(value) ~= "string" then return {} end
  return clean(media_list:match(value))
end

function M.tokens(value)
  if type(value) ~= "string" then return {} end
  return clean(token_list:match(value))
end

function M.content_type(value)
  if type(value) ~= "string" then return nil end
  local t = content_type:match(value)
  if not t then return nil end
  return t.type, t.subtype, t.params
end

-- --- choosing ---------------------------------------------------------------------------------

-- Short names an application may offer instead of a media type.
local SHORT = {
  json = "application/json", html = "text/html", text = "text/plain", txt = "text/plain",
  xml = "application/xml", css = "text/css", js = "text/javascript", csv = "text/csv",
  form = "application/x-www-form-urlencoded", urlencoded = "application/x-www-form-urlencoded",
  multipart = "multipart/*", png = "image/png", jpeg = "image/jpeg", pdf = "application/pdf",
  bin = "application/octet-stream",
}
M.SHORT = SHORT

-- The full media type of an offer ("json" -> "application/json"), split; nil when malformed.
function M.offer_type(offer)
  local full = SHORT[lower(offer)] or offer
  local t, s = full:match("^([^/%s]+)/([^/%s;]+)$")
  if not t then return nil end
  return lower(t), lower(s), full
end

-- How well a range covers a type: nil (not at all), else a specificity (higher is closer).
local function media_match(r, t, s)
  if r.type == "*" and r.subtype == "*" then return 1 end
  if r.type ~= t then return nil end
  if r.subtype == "*" then return 2 end
  if r.subtype ~= s then return nil end
  local n = 0
  for _ in pairs(r.params) do n = n + 1 end
  return 3 + n
end

-- Picks the offer with the highest q; ties: the more specific match, then the range that came
-- first in the header, then the offer that came first.
local function choose(offers, rate)
  local best, bq, bs, bi, bo
  for oi, offer in ipairs(offers) do
    local q, spec, ri = rate(offer)
    if q and q > 0 then
      if not best or q > bq or (q == bq and (spec > bs or (spec == bs and (ri < bi
        or (ri == bi and oi < bo))))) then
        best, bq, bs, bi, bo = offer, q, spec, ri, oi
      end
    end
  end
  return best
end

function M.best_media(ranges, offers)
  return choose(offers, function(offer)
    local t, s = M.offer_type(offer)
    if not t then return nil end
    local q, spec, ri
    for _, r in ipairs(ranges) do
      local m = media_match(r, t, s)
      if m and (not spec or m > spec) then q, spec, ri = r.q, m, r.i end
    end
    return q, spec, ri
  end)
end

-- RFC 4647 basic filtering: "en" covers "en" and "en-us"; "*" covers anything.
function M.best_language(ranges, offers)
  return choose(offers, function(offer)
    local tag = lower(offer)
    local q, spec, ri
    for _, r in ipairs(ranges) do
      local v, m = r.value, nil
      if v == "*" then m = 0
      elseif v == tag or (tag:sub(1, #v + 1) == v .. "-") then m = #v end
      if m and (not spec or m > spec) then q, spec, ri = r.q, m, r.i end
    end
    return q, spec, ri
  end)
end

-- RFC 9110 §12.5.3: identity is acceptable unless refused (identity;q=0, or *;q=0 without an
-- identity entry); no header at all makes identity the only coding chosen.
function M.best_encoding(ranges, offers, present)
  return choose(offers, function(offer)
    local c = lower(offer)
    if not present then
      if c == "identity" then return 1, 0, 0 end
      return nil
    end
    local q, spec, ri
    for _, r in ipairs(ranges) do
      local m = (r.value == c and 2) or (r.value == "*" and 1) or nil
      if m and (not spec or m > spec) then q, spec, ri = r.q, m, r.i end
    end
    if not q and c == "identity" then return 1, 0, #ranges + 1 end
    return q, spec, ri
  end)
end

-- Orders entries by preference (q, then header order): the list req:accepts() returns.
function M.ordered(list)
  local copy = {}
  for i, e in ipairs(list) do copy[i] = e end
  sort(copy, function(a, b)
    if a.q ~= b.q then return a.q > b.q end
    return a.i < b.i
  end)
  return copy
end

return M
