-- Argo CD health of a schemaops.dev Schema or SubjectConfig (Lua 5.1, as Argo CD's gopher-lua);
-- both kinds report the same conditions, so one script serves both.
-- Healthy: Ready=True for the current generation. Degraded: Stalled=True for the current
-- generation (an incompatible or invalid schema, a refused setting), with its message. Progressing otherwise:
-- being deleted, no status yet, a status or condition for an older generation, Reconciling=True.
local hs = { status = "Progressing", message = "Waiting for the schemaops controller" }
local generation = (obj.metadata and obj.metadata.generation) or 0

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.message = "Being deleted"
  return hs
end
if obj.status == nil or obj.status.observedGeneration == nil then
  return hs
end
if obj.status.observedGeneration < generation then
  hs.message = "Waiting for the controller to observe generation " .. generation
  return hs
end

-- A condition counts only for the current generation (its own observedGeneration, else the status').
local function current(condition)
  local observed = condition.observedGeneration or obj.status.observedGeneration
  return observed >= generation
end
local conditions = {}
for _, condition in ipairs(obj.status.conditions or {}) do
  if condition.type ~= nil and current(condition) then
    conditions[condition.type] = condition
  end
end

local stalled = conditions["Stalled"]
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.message or stalled.reason or "Stalled"
  return hs
end
local reconciling = conditions["Reconciling"]
if reconciling ~= nil and reconciling.status == "True" then
  hs.message = reconciling.message or reconciling.reason or "Reconciling"
  return hs
end
local ready = conditions["Ready"]
if ready ~= nil then
  if ready.status == "True" then
    hs.status = "Healthy"
  end
  hs.message = ready.message or ready.reason or hs.message
end
return hs
