-- Argo CD health of a schemaops.dev SchemaPolicy (Lua 5.1, as Argo CD's gopher-lua).
-- A policy has no Stalled condition: its Ready condition says it all.
-- Healthy: Ready=True for the current generation. Degraded: Ready=False with reason InvalidPolicy
-- for the current generation (the policy cannot be used), with its message. Progressing otherwise:
-- being deleted, no status yet, a status or Ready condition for an older generation.
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

-- The Ready condition counts only for the current generation (its own observedGeneration, else the status').
local ready = nil
for _, condition in ipairs(obj.status.conditions or {}) do
  if condition.type == "Ready" then
    ready = condition
  end
end
if ready == nil or (ready.observedGeneration or obj.status.observedGeneration) < generation then
  return hs
end

if ready.status == "True" then
  hs.status = "Healthy"
elseif ready.status == "False" and ready.reason == "InvalidPolicy" then
  hs.status = "Degraded"
end
hs.message = ready.message or ready.reason or hs.message
return hs
