-- What :PiIde status shows: the server, each agent served (its module's line), the clients,
-- what waits, the features' lines (the open reviews, the agents launched here, checkpoints:
-- lua/pi-ide/wiring.lua lists them), the log.
local parts = require("pi-ide.core.parts")

local M = {}

local function ago(t)
  local s = os.time() - t
  if s < 60 then
    return s .. "s ago"
  elseif s < 3600 then
    return math.floor(s / 60) .. "m ago"
  end
  return ("%dh%02dm ago"):format(math.floor(s / 3600), math.floor(s % 3600 / 60))
end

local function client_line(c)
  return ("    #%d %s%s%s, connected %s (%s), %d parked"):format(
    c.id,
    c.name or "(not initialized)",
    c.version and (" " .. c.version) or "",
    c.session_name and (" session %q"):format(c.session_name) or "",
    os.date("%H:%M:%S", c.connected_at),
    ago(c.connected_at),
    c.parked
  )
end

--- The status as lines of text.
function M.lines()
  local st = require("pi-ide.core.server").status()
  if not st.running then
    return { "pi-ide.nvim: not running (start it with :PiIde start)" }
  end
  local lines = {
    ("pi-ide.nvim: running on 127.0.0.1:%d as %q"):format(st.port, st.ide_name),
    "  lockfile: " .. st.lockfile,
  }
  for _, agent in ipairs(parts.get("agents").all()) do
    if agent.status_line then
      table.insert(lines, agent.status_line(st))
    end
  end
  vim.list_extend(lines, {
    "  workspace folders: " .. table.concat(st.workspace_folders, ", "),
    ("  clients: %d"):format(#st.clients),
  })
  vim.list_extend(lines, vim.tbl_map(client_line, st.clients))
  table.insert(lines, ("  parked requests: %d"):format(st.parked))
  local target
  for _, c in ipairs(st.clients) do
    if c.id == st.request_target then
      target = ("#%d %s"):format(c.id, c.name or "")
    end
  end
  table.insert(
    lines,
    ("  suggestions from: %s (the client that initialized last), %d in flight"):format(target or "no client", st.requests_in_flight)
  )
  for _, p in ipairs(parts.status()) do
    local feature = p.always and parts.get(p[1]) or parts.loaded(p[1])
    vim.list_extend(lines, feature and feature.status_lines() or {})
  end
  table.insert(lines, "  log: " .. require("pi-ide.core.log").path())
  return lines
end

return M
