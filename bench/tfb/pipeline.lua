-- bench/tfb/pipeline.lua: a wrk script sending DEPTH requests at once on each connection (TFB's
-- plaintext test pipelines 16): `wrk -s pipeline.lua URL -- 16`. wrk counts every response.
local depth, req
local wrk = wrk -- luacheck: globals wrk (wrk's API table)

function init(args) -- luacheck: ignore (wrk's hook, a global by its contract)
  depth = tonumber(args[1]) or 1
  local r = {}
  for i = 1, depth do r[i] = wrk.format() end
  req = table.concat(r)
end

function request() -- luacheck: ignore
  return req
end
