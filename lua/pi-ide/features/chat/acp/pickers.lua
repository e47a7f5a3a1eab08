-- :PiIde chat mode / model for an ACP chat: the modes and models its agent offers, picked with
-- vim.ui.select and set with session/set_mode / session/set_model.
local log = require("pi-ide.core.log")

local M = {}

local function pick(chat, list, key, what, method, field)
  if not chat.session or type(list) ~= "table" or #list == 0 then
    return log.notify(("%s offers no %s to choose from"):format(chat:label(), what), vim.log.levels.INFO)
  end
  vim.ui.select(list, {
    prompt = ("%s %s"):format(chat:label(), what),
    format_item = function(item)
      return tostring(item.name or item[key])
    end,
  }, function(choice)
    if not choice then
      return
    end
    chat:rpc(method, { sessionId = chat.session, [field] = choice[key] }, function(r)
      if r.success then
        chat.info[what] = choice[key]
        chat:changed()
      else
        log.notify(("%s: %s failed: %s"):format(chat:label(), method, tostring(r.error)), vim.log.levels.ERROR)
      end
    end)
  end)
end

function M.mode(chat)
  pick(chat, chat.info.modes, "id", "mode", "session/set_mode", "modeId")
end

function M.model(chat)
  pick(chat, chat.info.models, "modelId", "model", "session/set_model", "modelId")
end

return M
