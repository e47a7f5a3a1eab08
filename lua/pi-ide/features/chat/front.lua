-- Which chat is in front: the one opened or shown last. :PiIde ask, :PiIde abort, :PiIde chat
-- with no agent and the chat's actions go to it. "pi" is Pi's chat (features/chat/init.lua);
-- any other name is an ACP agent's (features/chat/acp/).
local M = {}

local front = "pi"

function M.set(name)
  front = name
end

function M.name()
  return front
end

--- The chat of `name` (default: the one in front), with open/send/abort/… as methods or
--- functions: call them through `M.call`.
local function chat_of(name)
  if name == "pi" then
    return nil
  end
  return require("pi-ide.features.chat.acp").get(name)
end

--- Calls `method` of chat `name` (default: the one in front) with `...`.
function M.call(method, name, ...)
  local acp = chat_of(name or front)
  if acp then
    return acp[method](acp, ...)
  end
  return require("pi-ide.features.chat")[method](...)
end

--- Hides the chats other than `name` (one chat shows at a time, in the same place).
function M.hide_others(name)
  if name ~= "pi" and package.loaded["pi-ide.features.chat"] then
    require("pi-ide.features.chat").hide()
  end
  for other, chat in pairs(require("pi-ide.features.chat.acp").all()) do
    if other ~= name then
      chat:hide()
    end
  end
end

--- Statusline text of the chat in front.
function M.status()
  local acp = chat_of(front)
  if acp then
    return acp:status()
  end
  return package.loaded["pi-ide.features.chat"] and require("pi-ide.features.chat").status() or ""
end

return M
