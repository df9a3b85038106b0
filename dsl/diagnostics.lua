-- dsl.diagnostics: how the schema compiler reports problems.
--
--   diagnostics.sort(list)                -> list, sorted in place by file, line, col, then as found
--   diagnostics.format(d, source)         -> "file:line:col: [phase] message\n<line>\n<caret>"
--   diagnostics.render(list, sources)     -> every diagnostic formatted, one after another
--   diagnostics.count(list)               -> errors, warnings
--   diagnostics.exit_code(list)           -> 1 when any is an error, else 0
--
-- A diagnostic is a table { file, line, col, phase ("lex", "parse", later "resolve"), severity
-- ("error" or "warning"), message }; pos and len (bytes) are optional. A warning's message is
-- prefixed with "warning: ". The caret line copies the tabs of the source line so that the caret
-- sits under the column on any tab width; columns count code points. This module must not
-- print: callers decide where the text goes.

local concat, sort = table.concat, table.sort
local format = string.format

local M = {}

local function before(a, b)
  if a.file ~= b.file then return (a.file or "") < (b.file or "") end
  if a.line ~= b.line then return a.line < b.line end
  if a.col ~= b.col then return a.col < b.col end
  return a.seq < b.seq
end

-- Sorts list in place by position (stable: equal positions keep their order) and returns it.
function M.sort(list)
  for i, d in ipairs(list) do d.seq = i end
  sort(list, before)
  for _, d in ipairs(list) do d.seq = nil end
  return list
end

-- The text of line n of source (without its newline), or nil.
-- Byte offsets where each line of source starts (starts[1] = 1).
local function line_starts(source)
  local starts, i = { 1 }, 1
  while true do
    i = source:find("\n", i, true)
    if not i then return starts end
    i = i + 1
    starts[#starts + 1] = i
  end
end

-- Line n of source without its line break; starts (from line_starts) makes it a lookup.
local function source_line(source, n, starts)
  local i
  if starts then
    i = starts[n]
  else
    i = 1
    for _ = 2, n do
      i = source:find("\n", i, true)
      if not i then return nil end
      i = i + 1
    end
  end
  if not i or i > #source + 1 then return nil end
  local j = source:find("\n", i, true)
  local line = source:sub(i, j and j - 1 or #source)
  return (line:gsub("\r$", ""))
end

-- The caret line for column col of line: the line's tabs kept, everything else a space, counted
-- in code points (UTF-8 continuation bytes do not count).
local function caret(line, col)
  local out, n, i = {}, 1, 1
  while n < col and i <= #line do
    local b = line:byte(i)
    if b < 0x80 or b >= 0xC0 then
      out[#out + 1] = b == 9 and "\t" or " "
      n = n + 1
    end
    i = i + 1
  end
  -- Past the end of the line (an error at end of file): pad with spaces.
  for _ = n, col - 1 do out[#out + 1] = " " end
  return concat(out) .. "^"
end

-- Formats one diagnostic. source is the text of d.file (optional: without it, no source line);
-- starts, the line starts of source, saves a scan from the top per diagnostic (render passes it).
function M.format(d, source, starts)
  local head = format("%s:%d:%d: [%s] %s%s", d.file or "<input>", d.line or 0, d.col or 0,
    d.phase or "check", d.severity == "warning" and "warning: " or "", d.message)
  local line = source and d.line and source_line(source, d.line, starts)
  if not line then return head end
  return head .. "\n" .. line .. "\n" .. caret(line, d.col or 1)
end

-- Formats every diagnostic of list (sorted first), each followed by a newline. sources maps a
-- file name to its text.
function M.render(list, sources)
  local out, starts = {}, {}
  M.sort(list)
  for _, d in ipairs(list) do
    local source = sources and sources[d.file]
    if source and not starts[d.file] then starts[d.file] = line_starts(source) end
    out[#out + 1] = M.format(d, source, source and starts[d.file]) .. "\n"
  end
  return concat(out)
end

-- The number of errors and of warnings in list.
function M.count(list)
  local errors, warnings = 0, 0
  for _, d in ipairs(list) do
    if d.severity == "warning" then warnings = warnings + 1 else errors = errors + 1 end
  end
  return errors, warnings
end

-- 1 when list holds any error, 0 otherwise.
function M.exit_code(list)
  local errors = M.count(list)
  return errors > 0 and 1 or 0
end

return M
