-- :PiIde resume for an ACP chat: the agent's earlier sessions of this folder (session/list),
-- picked with vim.ui.select and loaded (session/load): the agent replays the conversation into
-- the chat, which is cleared first.
local log = require("pi-ide.core.log")

local M = {}

local function label_of(s)
  local title = type(s.title) == "string" and s.title ~= "" and s.title or s.sessionId
  return type(s.updatedAt) == "string" and ("%s  (%s)"):format(title, s.updatedAt) or title
end

local function load(chat, session)
  local params = { sessionId = session.sessionId, cwd = chat.cwd, mcpServers = chat:mcp_servers() }
  chat.view.clear()
  chat:set_state("working")
  chat:rpc("session/load", params, function(r)
    chat:set_state("idle")
    chat.view.finish()
    if not r.success then
      return log.notify(("%s could not load the session: %s"):format(chat:label(), tostring(r.error)), vim.log.levels.ERROR)
    end
    chat.session = session.sessionId
    chat:opened(vim.tbl_extend("force", type(r.data) == "table" and r.data or {}, { sessionId = session.sessionId }))
  end)
end

---@param chat PiIde.AcpChat
function M.pick(chat)
  if not (chat:ensure() and chat.session) then
    return log.notify(chat:label() .. " has not opened its session yet; try again in a moment", vim.log.levels.INFO)
  end
  if not (chat.caps and chat.caps.loadSession) then
    return log.notify(chat:label() .. " cannot load earlier sessions", vim.log.levels.INFO)
  end
  chat:rpc("session/list", { cwd = chat.cwd }, function(r)
    local list = r.success and type(r.data) == "table" and r.data.sessions or nil
    if type(list) ~= "table" or #list == 0 then
      return log.notify(("%s lists no earlier session here%s"):format(chat:label(), r.success and "" or (": " .. tostring(r.error))), vim.log.levels.INFO)
    end
    vim.ui.select(list, { prompt = chat:label() .. " sessions", format_item = label_of }, function(choice)
      if choice then
        load(chat, choice)
      end
    end)
  end)
end

return M
