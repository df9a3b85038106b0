-- zever.saga: the runtime of the .zen `saga` declarations (the sagas backend generates their
-- definitions). A saga is a sequence of steps, each an RPC handler; its progress lives in the
-- database, so a worker that dies between steps loses nothing and repeats nothing that finished.
--
--   saga.migrate(db)                        creates zever_sagas and zever_saga_steps (idempotent)
--   saga.start(db, def, input[, id])        -> id            a new saga in state "running"
--   saga.run(db, def, handlers, id[, opts]) -> state, err    drives it as far as it goes
--   saga.status(db, id)                     -> { id, name, state, error, steps = {...} } | nil
--   saga.retry(db, id)                      -> true | nil, err   a "stuck" saga runs again
--
-- def = { name =, steps = { { name =, execute = { service =, rpc = }, compensate = {...}?,
-- pivot = true? }, ... } }; handlers[service][rpc](input, ctx) -> result | nil, err, the same
-- functions the routes call. ctx = { saga_id, step, phase, idempotency_key, results } where
-- idempotency_key is "<saga id>:<step>:<phase>": a handler whose effect must happen once passes it
-- on (to the payment provider, a unique column): a worker killed after the effect and before the
-- step was recorded runs the step again with the same key.
--
-- Semantics: steps run in order; each finished step's result is stored before the next starts.
-- A step that fails at or before the pivot compensates the finished steps in reverse order (each
-- compensation stored too) and ends "compensated" (err is the failure). After the pivot the saga
-- rolls forward: the failing step is tried again up to opts.attempts times (default 3); then the
-- saga is "stuck" until saga.retry (or `zever saga retry <id>`) and a new run. The states:
-- running, done, compensated, stuck.

local json = require "zever.json"

local format = string.format

local M = {}

local DDL = {
  [[CREATE TABLE IF NOT EXISTS zever_sagas (id TEXT PRIMARY KEY, name TEXT NOT NULL,
    state TEXT NOT NULL, input TEXT NOT NULL, error TEXT)]],
  [[CREATE TABLE IF NOT EXISTS zever_saga_steps (saga_id TEXT NOT NULL, step TEXT NOT NULL,
    phase TEXT NOT NULL, status TEXT NOT NULL, result TEXT, attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT, PRIMARY KEY (saga_id, step, phase))]],
}

function M.migrate(db)
  for _, sql in ipairs(DDL) do db:exec(sql) end
end

local counter = 0
local function new_id()
  counter = counter + 1
  return format("%x-%x-%x", os.time(), math.random(0, 0x7fffffff), counter)
end

function M.start(db, def, input, id)
  if type(def) ~= "table" or type(def.name) ~= "string" then error("saga.start: def needs a name", 2) end
  id = id or new_id()
  db:exec("INSERT INTO zever_sagas (id, name, state, input) VALUES (?, ?, 'running', ?)", id,
    def.name, json.encode(input == nil and json.object() or input))
  return id
end

local function row(db, id)
  return db:first("SELECT id, name, state, input, error FROM zever_sagas WHERE id = ?", id)
end

local function step_row(db, id, step, phase)
  return db:first("SELECT status, result, attempts, error FROM zever_saga_steps WHERE saga_id = ? "
    .. "AND step = ? AND phase = ?", id, step, phase)
end

local function record(db, id, step, phase, status, result, attempts, err)
  db:exec("INSERT INTO zever_saga_steps (saga_id, step, phase, status, result, attempts, error) "
    .. "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (saga_id, step, phase) DO UPDATE SET "
    .. "status = excluded.status, result = excluded.result, attempts = excluded.attempts, "
    .. "error = excluded.error", id, step, phase, status,
    result ~= nil and json.encode(result) or nil, attempts, err)
end

local function set_state(db, id, state, err)
  db:exec("UPDATE zever_sagas SET state = ?, error = ? WHERE id = ?", state, err, id)
end

local function err_text(err)
  if type(err) == "table" then return tostring(err.code or "error") .. ": " .. tostring(err.message or "") end
  return tostring(err)
end

-- Calls one side (execute or compensate) of a step: ok, result | false, error text.
local function call(handlers, ref, input, ctx)
  local svc = handlers[ref.service]
  local fn = type(svc) == "table" and svc[ref.rpc]
  if type(fn) ~= "function" then
    error(format("saga: no handler %s.%s", ref.service, ref.rpc), 0)
  end
  local ok, result, err = pcall(fn, input, ctx)
  if not ok then return false, tostring(result) end
  if err ~= nil then return false, err_text(err) end
  return true, result
end

function M.run(db, def, handlers, id, opts)
  opts = opts or {}
  local attempts_max = opts.attempts or 3
  local s = row(db, id)
  if not s then return nil, "no saga " .. tostring(id) end
  if s.state ~= "running" then return s.state end
  local input = json.decode(s.input)
  local results = {}
  local pivot_at
  for i, st in ipairs(def.steps) do
    if st.pivot then pivot_at = i end
  end
  local function ctx(st, phase)
    return { saga_id = id, step = st.name, phase = phase, results = results,
      idempotency_key = id .. ":" .. st.name .. ":" .. phase }
  end
  for i, st in ipairs(def.steps) do
    local done = step_row(db, id, st.name, "execute")
    if done and done.status == "done" then
      results[st.name] = done.result and json.decode(done.result) or nil
    else
      local attempts = done and done.attempts or 0
      local rolling = pivot_at and i > pivot_at
      while true do
        attempts = attempts + 1
        local ok, result = call(handlers, st.execute, input, ctx(st, "execute"))
        if ok then
          record(db, id, st.name, "execute", "done", result, attempts, nil)
          results[st.name] = result
          break
        end
        record(db, id, st.name, "execute", "failed", nil, attempts, result)
        if not rolling then
          -- At or before the pivot: undo what finished, newest first.
          for j = i - 1, 1, -1 do
            local prev = def.steps[j]
            if prev.compensate then
              local c = step_row(db, id, prev.name, "compensate")
              if not (c and c.status == "done") then
                local cok, cres = call(handlers, prev.compensate, input, ctx(prev, "compensate"))
                if not cok then
                  record(db, id, prev.name, "compensate", "failed", nil, (c and c.attempts or 0) + 1, cres)
                  set_state(db, id, "stuck", "compensation of " .. prev.name .. " failed: " .. cres)
                  return "stuck", cres
                end
                record(db, id, prev.name, "compensate", "done", cres, (c and c.attempts or 0) + 1, nil)
              end
            end
          end
          set_state(db, id, "compensated", st.name .. ": " .. result)
          return "compensated", result
        end
        if attempts >= attempts_max then
          set_state(db, id, "stuck", st.name .. ": " .. result)
          return "stuck", result
        end
      end
    end
  end
  set_state(db, id, "done", nil)
  return "done"
end

function M.status(db, id)
  local s = row(db, id)
  if not s then return nil end
  local steps = {}
  for _, r in ipairs(db:query("SELECT step, phase, status, attempts, error FROM zever_saga_steps "
    .. "WHERE saga_id = ? ORDER BY phase DESC, step", id)) do
    steps[#steps + 1] = r
  end
  return { id = s.id, name = s.name, state = s.state, error = s.error, steps = steps }
end

function M.retry(db, id)
  local s = row(db, id)
  if not s then return nil, "no saga " .. tostring(id) end
  if s.state ~= "stuck" then return nil, format("saga %s is %s, not stuck", id, s.state) end
  db:exec("UPDATE zever_saga_steps SET attempts = 0 WHERE saga_id = ? AND status = 'failed'", id)
  set_state(db, id, "running", nil)
  return true
end

return M
