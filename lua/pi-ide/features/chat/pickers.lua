-- Pickers for the chat's Pi: its model (get_available_models, set_model) and thinking level
-- (get_available_thinking_levels, set_thinking_level), with vim.ui.select.
local chat = require("pi-ide.features.chat")

local M = {}

-- The list `field` of the answer to `command` (nil when Pi did not give one).
local function ask_list(command, field)
  local r = chat.request({ type = command })
  local list = r and type(r.data) == "table" and r.data[field] or nil
  return type(list) == "table" and list or nil
end

function M.model()
  local models = ask_list("get_available_models", "models")
  if not models then
    return
  end
  if #models == 0 then
    return vim.notify("pi-ide.nvim: Pi has no models configured", vim.log.levels.WARN)
  end
  local current = chat.info().model_key
  vim.ui.select(models, {
    prompt = "Pi's model",
    format_item = function(m)
      local key = m.provider .. "/" .. m.id
      return ("%s %s (%s)"):format(key == current and "●" or " ", m.name or m.id, key)
    end,
  }, function(m)
    if not m then
      return
    end
    local set = chat.request({ type = "set_model", provider = m.provider, modelId = m.id })
    if set then
      chat.set_info("model", m.name or m.id)
      chat.set_info("model_key", m.provider .. "/" .. m.id)
    end
  end)
end

function M.thinking()
  local levels = ask_list("get_available_thinking_levels", "levels")
  if not levels then
    return
  end
  local current = chat.info().thinking
  vim.ui.select(levels, {
    prompt = "Pi's thinking level",
    format_item = function(l)
      return (l == current and "● " or "  ") .. l
    end,
  }, function(level)
    if level and chat.request({ type = "set_thinking_level", level = level }) then
      chat.set_info("thinking", level)
    end
  end)
end

return M
