-- The agents connected, as the user reads them: the name each gave, and its session's title when
-- it gave one (`pi-ide`, `<cli> “Fix the login”`: the title is what tells two sessions of one
-- agent apart). The core holds them (native.agents(): one short lock).
local M = {}

local MAX_TITLE = 24

local function title(s)
  if not s or s == "" then
    return nil
  end
  if vim.fn.strchars(s) > MAX_TITLE then
    s = vim.fn.strcharpart(s, 0, MAX_TITLE - 1) .. "…"
  end
  return "“" .. s .. "”"
end

--- One agent as a label: its name (or its kind's), and its session's title when it gave one.
function M.label(a)
  local kind = a.agent and require("pi-ide.core.parts").get("agents").get(a.agent)
  local name = a.name or kind and kind.short or "agent"
  local t = title(a.session_name)
  return t and (name .. " " .. t) or name
end

--- Every agent connected ({} when the server is off).
function M.list()
  local native = require("pi-ide.core.native").get()
  local server = package.loaded["pi-ide.core.server"]
  if not (native and server and server.running()) then
    return {}
  end
  return native.agents()
end

--- The label of client `id`, if it is connected.
function M.label_of(id)
  for _, a in ipairs(M.list()) do
    if a.id == id then
      return M.label(a)
    end
  end
end

--- The agent (its module, lua/pi-ide/agents/) client `id` came as, if it is connected.
function M.kind_of(id)
  for _, a in ipairs(M.list()) do
    if a.id == id then
      return require("pi-ide.core.parts").get("agents").get(a.agent)
    end
  end
end

-- An agent as the user names it: a chat's by its chat (tag "chat:<name>"), one served as
-- another's wire (`served_as`) by its client's name.
local function agent_name(a)
  local chat = a.agent == "chat" and type(a.tag) == "string" and a.tag:match("^chat:(.+)$")
  if chat then
    return chat
  end
  for _, kind in ipairs(require("pi-ide.core.parts").get("agents").all()) do
    if kind.served_as == a.agent and (a.name or ""):lower():find(kind.name, 1, true) then
      return kind.name
    end
  end
  return a.agent
end

--- The name of the agent client `id` is (review.when's keys), if it is connected.
function M.agent_name(id)
  for _, a in ipairs(M.list()) do
    if a.id == id then
      return agent_name(a)
    end
  end
end

--- All of them, for the statusline: "pi-ide, <cli> “Fix…”", or nil when none.
function M.summary()
  local labels = vim.tbl_map(M.label, M.list())
  return #labels > 0 and table.concat(labels, ", ") or nil
end

return M
