-- zever.sort: in-place sorts written in Lua, so that LuaJIT compiles them with the comparison
-- inlined. table.sort is a C function: every comparison is a call back into Lua through the
-- classic API (lua_rawgeti, lua_call), which LuaJIT never compiles, and a handler's trace stops
-- at it (callgrind, bench/tfb /fortunes: ~8,700 instructions a request to sort 13 rows by
-- message with table.sort and a Lua comparator).
--
--   local sort = require "zever.sort"
--   sort.by(list, key[, desc])   sorts list[1..#list] by v[key] (< on its values: numbers or
--                                strings, all of one type), ascending or descending
--   sort.sort(list[, less])      sorts list[1..#list] with less(a, b) (default: <)
--
-- Both return list. The order is not stable (as table.sort's): equal elements may swap. The
-- algorithm is a quicksort (median of three, the smaller side recursed, the larger looped) that
-- finishes runs of at most 12 with insertion sort, so a page's worth of rows is one insertion
-- sort. A comparison that raises (values of two types) raises out of the sort; the list is then
-- a permutation of what it was. It must not allocate.

local type, error = type, error

local M = {}

local SMALL = 12

local function lt(a, b)
  return a < b
end

-- Insertion sort of t[lo..hi] by less.
local function insertion(t, lo, hi, less)
  for i = lo + 1, hi do
    local v = t[i]
    local j = i - 1
    while j >= lo and less(v, t[j]) do
      t[j + 1] = t[j]
      j = j - 1
    end
    t[j + 1] = v
  end
end

local function quick(t, lo, hi, less)
  while hi - lo >= SMALL do
    local mid = lo + (hi - lo - (hi - lo) % 2) / 2
    -- Median of three into t[mid], t[lo] <= t[mid] <= t[hi].
    if less(t[mid], t[lo]) then t[mid], t[lo] = t[lo], t[mid] end
    if less(t[hi], t[mid]) then
      t[hi], t[mid] = t[mid], t[hi]
      if less(t[mid], t[lo]) then t[mid], t[lo] = t[lo], t[mid] end
    end
    local p = t[mid]
    local i, j = lo, hi
    repeat
      while less(t[i], p) do i = i + 1 end
      while less(p, t[j]) do j = j - 1 end
      if i <= j then
        t[i], t[j] = t[j], t[i]
        i, j = i + 1, j - 1
      end
    until i > j
    if j - lo < hi - i then
      quick(t, lo, j, less)
      lo = i
    else
      quick(t, i, hi, less)
      hi = j
    end
  end
  insertion(t, lo, hi, less)
end

function M.sort(list, less)
  if type(list) ~= "table" then error("sort.sort: expects a list", 2) end
  if less ~= nil and type(less) ~= "function" then
    error("sort.sort: less must be a function", 2)
  end
  quick(list, 1, #list, less or lt)
  return list
end

-- The key sorts: the same algorithm with the field read inline (no comparator call at all).
local function insertion_by(t, lo, hi, k)
  for i = lo + 1, hi do
    local v = t[i]
    local vk = v[k]
    local j = i - 1
    while j >= lo and vk < t[j][k] do
      t[j + 1] = t[j]
      j = j - 1
    end
    t[j + 1] = v
  end
end

local function quick_by(t, lo, hi, k)
  while hi - lo >= SMALL do
    local mid = lo + (hi - lo - (hi - lo) % 2) / 2
    if t[mid][k] < t[lo][k] then t[mid], t[lo] = t[lo], t[mid] end
    if t[hi][k] < t[mid][k] then
      t[hi], t[mid] = t[mid], t[hi]
      if t[mid][k] < t[lo][k] then t[mid], t[lo] = t[lo], t[mid] end
    end
    local p = t[mid][k]
    local i, j = lo, hi
    repeat
      while t[i][k] < p do i = i + 1 end
      while p < t[j][k] do j = j - 1 end
      if i <= j then
        t[i], t[j] = t[j], t[i]
        i, j = i + 1, j - 1
      end
    until i > j
    if j - lo < hi - i then
      quick_by(t, lo, j, k)
      lo = i
    else
      quick_by(t, i, hi, k)
      hi = j
    end
  end
  insertion_by(t, lo, hi, k)
end

local function reverse(t)
  local i, j = 1, #t
  while i < j do
    t[i], t[j] = t[j], t[i]
    i, j = i + 1, j - 1
  end
end

function M.by(list, key, desc)
  if type(list) ~= "table" then error("sort.by: expects a list", 2) end
  if key == nil then error("sort.by: expects a key", 2) end
  quick_by(list, 1, #list, key)
  if desc then reverse(list) end
  return list
end

return M
