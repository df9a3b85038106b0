-- zever.saga: the runtime of the .zen `saga` declarations, on zever.workflow. The routes backend
-- writes each saga's steps into generated/routes.lua (routes.sagas); saga.define makes one a
-- workflow whose steps call the same RPC handlers as the routes, so a saga runs as jobs of
-- `zever worker`, each step's result recorded once, surviving a worker killed between steps.
--
--   saga.define(wf, def, handlers[, opts])    -> wf   the workflow def.name (opts: attempts = 3,
--                                                     base = 1: the retries after the pivot)
--   saga.register(wf, sagas, handlers[, opts]) -> wf  every saga of a table (routes.sagas)
--   wf:start(def.name, input[, id])           -> id   (zever.workflow: a run is a job)
--   saga.status(wf, id) -> { id, name, status, error, attempts, steps = { { step, phase,
--                             status }, ... } } | nil, err
--   saga.retry(wf, id)  -> true | nil, err            a stuck saga runs again (wf:retry)
--
-- def = { name =, steps = { { name =, execute = { service =, rpc = }, compensate = {...}?,
-- pivot = true? }, ... } }; handlers[service][rpc](input, ctx) -> result | nil, err, the same
-- functions the routes call (input is the saga's). ctx = { saga_id, step, phase,
-- idempotency_key, results }: the key is "<run id>/<step>" for execute and
-- "<run id>/compensate:<step>" for compensate; a handler whose effect must happen once passes
-- it on (to the payment provider, a unique column), for the one case where a step runs twice:
-- a worker killed after the effect and before the record. results holds the results of the
-- steps before this one (execute) or this step's own result under its name (compensate).
--
-- Semantics (the saga pattern's three groups of steps): the steps before the pivot and the
-- pivot itself are compensatable: one that fails (raises, or returns nil, err) fails the run at
-- once, and the compensations of the finished steps run in reverse order, each once (status
-- "failed"). Once the pivot is recorded the saga is committed: a failing later step is retried
-- (opts.attempts, backoff opts.base * 2^n seconds), then the run is "stuck" (never compensated)
-- until saga.retry / `zever saga retry <id>`. A saga without a pivot compensates on any failure.
-- Statuses are the workflow's: pending, running, completed, compensating, failed, stuck,
-- cancelling, cancelled.
--
-- The first runtime (saga.migrate/start/run(db, ...) over tables zever_sagas and
-- zever_saga_steps) is gone: those calls raise a message that says what replaced them.

local battery = require "zever.battery"

local type, error, format, pcall, tostring = type, error, string.format, pcall, tostring

local M = {}

local GONE = "zever.saga.%s(db, ...) is gone: .zen sagas run on zever.workflow now: " ..
  "saga.define(app.workflow, routes.sagas.Name, handlers), then app.workflow:start(name, input) " ..
  "(docs/zen.md#sagas)"

for _, name in ipairs{ "migrate", "start", "run" } do
  M[name] = function() error(format(GONE, name), 2) end
end

local function is_workflow(wf)
  return type(wf) == "table" and wf.battery == "workflow" and type(wf.define) == "function"
end

local function err_text(err)
  if type(err) == "table" then
    return tostring(err.code or "error") .. ": " .. tostring(err.message or "")
  end
  return tostring(err)
end

local function handler(handlers, ref, who)
  local svc = handlers[ref.service]
  local fn = type(svc) == "table" and svc[ref.rpc]
  if type(fn) ~= "function" then
    error(format("saga.define: %s: no handler %s.%s", who, tostring(ref.service),
      tostring(ref.rpc)), 3)
  end
  return fn
end

-- Calls a handler; its result, or raises "<step>: <error>" when it failed.
local function call(fn, input, ctx)
  local ok, result, err = pcall(fn, input, ctx)
  if not ok then error(ctx.step .. ": " .. tostring(result), 0) end
  if err ~= nil then error(ctx.step .. ": " .. err_text(err), 0) end
  return result
end

function M.define(wf, def, handlers, opts)
  if not is_workflow(wf) then
    error("saga.define: wf must be a zever.workflow (app.workflow)", 2)
  end
  if type(def) ~= "table" or type(def.name) ~= "string" or type(def.steps) ~= "table" then
    error("saga.define: def must be a saga of routes.sagas ({ name =, steps = })", 2)
  end
  if type(handlers) ~= "table" then error("saga.define: handlers must be a table of services", 2) end
  battery.opt_table(opts, "saga.define", "opts")
  opts = opts or {}
  local pivot_at
  for i, st in ipairs(def.steps) do
    if st.pivot then pivot_at = i end
  end
  local steps, compensate = {}, {}
  for i, st in ipairs(def.steps) do
    local who = def.name .. "." .. tostring(st.name)
    local exec = handler(handlers, st.execute or {}, who)
    local undo = st.compensate and handler(handlers, st.compensate, who)
    -- At or before the pivot (every step when there is none): a failure compensates at once.
    steps[i] = { name = st.name, fn = exec, opts = { retry = not (pivot_at == nil or i <= pivot_at),
      pivot = st.pivot or nil } }
    if undo then
      compensate[st.name] = function(result, input, key)
        call(undo, input, { saga_id = key:match("^(.*)/"), step = st.name, phase = "compensate",
          idempotency_key = key, results = { [st.name] = result } })
      end
    end
  end
  wf:define(def.name, function(ctx, input)
    local results = {}
    for _, st in ipairs(steps) do
      results[st.name] = ctx:step(st.name, function(key)
        return call(st.fn, input, { saga_id = ctx.id, step = st.name, phase = "execute",
          idempotency_key = key, results = results })
      end, st.opts)
    end
    return results
  end, { compensate = compensate, attempts = opts.attempts, base = opts.base })
  return wf
end

function M.register(wf, sagas, handlers, opts)
  if type(sagas) ~= "table" then error("saga.register: sagas must be routes.sagas", 2) end
  for _, def in pairs(sagas) do M.define(wf, def, handlers, opts) end
  return wf
end

function M.status(wf, id)
  if not is_workflow(wf) then error(format(GONE, "status"), 2) end
  local st, err = wf:status(id)
  if not st then return nil, err end
  local undone = {}
  for _, name in ipairs(st.compensated) do undone[name] = true end
  local steps = {}
  for _, name in ipairs(st.steps) do
    steps[#steps + 1] = { step = name, phase = "execute", status = "done" }
  end
  for i = #st.steps, 1, -1 do
    local name = st.steps[i]
    if undone[name] then steps[#steps + 1] = { step = name, phase = "compensate", status = "done" } end
  end
  return { id = st.id, name = st.name, status = st.status, error = st.error,
    attempts = st.attempts, committed = st.committed, output = st.output, steps = steps }
end

function M.retry(wf, id)
  if not is_workflow(wf) then error(format(GONE, "retry"), 2) end
  return wf:retry(id)
end

return M
