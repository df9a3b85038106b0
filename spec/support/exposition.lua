-- spec.support.exposition: a strict parser of the Prometheus text format (0.0.4) and of
-- OpenMetrics 1.0.0 text, for specs that check what /metrics answers (promtool checks the
-- Prometheus text too when it is installed; it cannot read OpenMetrics).
--
--   exposition.parse(text, "prometheus" | "openmetrics") -> families | nil, message
--   families[name] = { type =, help =, samples = { { name, labels = {}, value }, ... } }
--
-- Strict: every sample belongs to the family declared by the # TYPE before it (its name, or
-- name_bucket/_sum/_count of a histogram, name_total of an OpenMetrics counter), label values
-- are quoted with \\, \" and \n escapes only, values are floats (+Inf, -Inf, NaN), a family is
-- declared once, histogram buckets are cumulative and end with le="+Inf" equal to _count, and
-- OpenMetrics text ends with "# EOF" and nothing after it.

local M = {}

local function parse_labels(s, lineno)
  local labels, i = {}, 1
  if s == "" then return labels end
  while i <= #s do
    local name, rest = s:match("^([%a_][%w_]*)=\"()", i)
    if not name then return nil, ("line %d: bad label at %q"):format(lineno, s:sub(i)) end
    local j, out = rest, {}
    while true do
      local c = s:sub(j, j)
      if c == "" then return nil, ("line %d: unterminated label value"):format(lineno) end
      if c == '"' then break end
      if c == "\\" then
        local e = s:sub(j + 1, j + 1)
        if e == "n" then out[#out + 1] = "\n"
        elseif e == "\\" or e == '"' then out[#out + 1] = e
        else return nil, ("line %d: bad escape \\%s"):format(lineno, e) end
        j = j + 2
      else
        out[#out + 1] = c
        j = j + 1
      end
    end
    if labels[name] then return nil, ("line %d: label %s twice"):format(lineno, name) end
    labels[name] = table.concat(out)
    i = j + 1
    if s:sub(i, i) == "," then i = i + 1 elseif i <= #s then
      return nil, ("line %d: expected , between labels"):format(lineno)
    end
  end
  return labels
end

local function number(s)
  if s == "+Inf" then return math.huge elseif s == "-Inf" then return -math.huge
  elseif s == "NaN" then return 0 / 0 end
  -- Decimal floats only (no hex, no spaces): digits, one optional point, an optional exponent.
  local mant, exp = s:match("^[-+]?([%d.]+)(.*)$")
  if not mant or not mant:match("%d") or select(2, mant:gsub("%.", "")) > 1 then return nil end
  if exp ~= "" and not exp:match("^[eE][-+]?%d+$") then return nil end
  return tonumber(s)
end

local SUFFIXES = {
  prometheus = { counter = { "" }, gauge = { "" }, histogram = { "_bucket", "_sum", "_count" } },
  openmetrics = { counter = { "_total", "_created" }, gauge = { "" },
    histogram = { "_bucket", "_sum", "_count", "_created" } },
}

function M.parse(text, fmt)
  local fams, current, seen_eof = {}, nil, false
  local lineno = 0
  if fmt == "openmetrics" and text:sub(-6) ~= "# EOF\n" then
    return nil, "OpenMetrics text must end with # EOF"
  end
  for line in text:gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    if seen_eof then return nil, ("line %d: text after # EOF"):format(lineno) end
    if line == "# EOF" and fmt == "openmetrics" then
      seen_eof = true
    elseif line:match("^# HELP ") then
      local name, help = line:match("^# HELP ([%a_:][%w_:]*) ?(.*)$")
      if not name then return nil, ("line %d: bad HELP"):format(lineno) end
      if fams[name] and fams[name].help then return nil, ("line %d: HELP twice"):format(lineno) end
      fams[name] = fams[name] or { samples = {} }
      fams[name].help = help
      current = name
    elseif line:match("^# TYPE ") then
      local name, typ = line:match("^# TYPE ([%a_:][%w_:]*) (%a+)$")
      if not name or not SUFFIXES[fmt][typ] then return nil, ("line %d: bad TYPE"):format(lineno) end
      fams[name] = fams[name] or { samples = {} }
      if fams[name].type then return nil, ("line %d: TYPE twice for %s"):format(lineno, name) end
      if #fams[name].samples > 0 then return nil, ("line %d: TYPE after samples"):format(lineno) end
      fams[name].type = typ
      current = name
    elseif line:match("^#") then
      if fmt == "openmetrics" then return nil, ("line %d: unknown comment"):format(lineno) end
    elseif line == "" then
      if fmt == "openmetrics" then return nil, ("line %d: empty line"):format(lineno) end
    else
      local sname, rest = line:match("^([%a_:][%w_:]*)(.*)$")
      if not sname then return nil, ("line %d: bad sample"):format(lineno) end
      local labels = {}
      local lab = rest:match("^{(.-)} ")
      if lab then
        local err
        labels, err = parse_labels(lab, lineno)
        if not labels then return nil, err end
        rest = rest:sub(#lab + 4)
      else
        rest = rest:match("^ (.*)$")
        if not rest then return nil, ("line %d: no value"):format(lineno) end
      end
      local v = number(rest)
      if not v then return nil, ("line %d: bad value %q"):format(lineno, rest) end
      local f = current and fams[current]
      if not f or not f.type then return nil, ("line %d: sample before TYPE"):format(lineno) end
      local ok = false
      for _, suffix in ipairs(SUFFIXES[fmt][f.type]) do
        if sname == current .. suffix then ok = true end
      end
      if not ok then return nil, ("line %d: %s is not of family %s"):format(lineno, sname, current) end
      f.samples[#f.samples + 1] = { name = sname, labels = labels, value = v }
    end
  end
  -- Histograms: cumulative buckets ending with +Inf equal to _count, per label set.
  for name, f in pairs(fams) do
    if f.type == "histogram" then
      local last, inf = {}, {}
      for _, s in ipairs(f.samples) do
        local key = {}
        for k, v in pairs(s.labels) do if k ~= "le" then key[#key + 1] = k .. "=" .. v end end
        table.sort(key)
        key = table.concat(key, ",")
        if s.name == name .. "_bucket" then
          if not s.labels.le then return nil, name .. ": a bucket without le" end
          if last[key] and s.value < last[key] then return nil, name .. ": buckets not cumulative" end
          last[key] = s.value
          if s.labels.le == "+Inf" then inf[key] = s.value end
        elseif s.name == name .. "_count" then
          if inf[key] ~= s.value then return nil, name .. ": _count differs from le=\"+Inf\"" end
        end
      end
    end
  end
  return fams
end

-- The samples of family name whose labels include want (a table), summed.
function M.sum(fams, name, want)
  local f = fams[name]
  if not f then return 0 end
  local total = 0
  for _, s in ipairs(f.samples) do
    local ok = true
    for k, v in pairs(want or {}) do if s.labels[k] ~= v then ok = false end end
    if ok and (s.name == name or s.name == name .. "_total") then total = total + s.value end
  end
  return total
end

return M
