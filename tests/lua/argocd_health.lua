-- Runs an Argo CD health script on one test case, as Argo CD does: the object is the global
-- `obj` in a sandbox with only the base, table, string and math libraries, and the script's
-- return value is the health. Prints {"status","message"} as JSON.
-- Usage: lua5.1 argocd_health.lua SCRIPT CASE.json   (CASE.json holds {"object": {...}, ...})
local json = require("dkjson")

local script_path, case_path = arg[1], arg[2]
local file = assert(io.open(case_path, "r"))
local case, _, decode_error = json.decode(file:read("*a"), 1, nil)
file:close()
if case == nil then
  io.stderr:write("cannot decode " .. case_path .. ": " .. tostring(decode_error) .. "\n")
  os.exit(2)
end

local sandbox = {
  obj = case.object,
  ipairs = ipairs, pairs = pairs, next = next, type = type, tostring = tostring,
  tonumber = tonumber, select = select, unpack = unpack, error = error, pcall = pcall,
  table = table, string = string, math = math,
}
local chunk = assert(loadfile(script_path))
setfenv(chunk, sandbox)
local ok, health = pcall(chunk)
if not ok then
  io.stderr:write("the health script failed: " .. tostring(health) .. "\n")
  os.exit(3)
end
print(json.encode({ status = health.status, message = health.message }))
