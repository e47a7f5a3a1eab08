-- :PiIde model: pick the model the agent uses for suggestions, from the agent's own list
-- (listSuggestionModels). The choice is sent as `model` with every getSuggestions.
local log = require("pi-ide.core.log")

local M = {}

local function label(m)
  local id = ("%s/%s"):format(m.provider or "?", m.id or "?")
  return m.name and m.name ~= "" and (id .. " · " .. m.name) or id, id
end

function M.pick()
  local req, err = require("pi-ide.core.requests").send("listSuggestionModels", vim.empty_dict(), 10000, function(result, e)
    if e then
      log.notify("cannot list models: " .. tostring(e.message), vim.log.levels.ERROR)
      return
    end
    local models = type(result) == "table" and type(result.models) == "table" and result.models or {}
    if #models == 0 then
      vim.notify("pi-ide.nvim: the agent lists no models", vim.log.levels.WARN)
      return
    end
    local suggest = require("pi-ide.features.suggest")
    local current = suggest.model() or result.currentModel
    local items = {}
    for _, m in ipairs(models) do
      local text, id = label(m)
      table.insert(items, { text = text .. ((id == current or m.model == current) and "  (current)" or ""), id = id })
    end
    table.insert(items, { text = "the agent's default", id = false })
    local prompt = "Model for suggestions"
    if result.cliOverride then
      prompt = ("%s (the agent's --pi-ide-suggestion-model %s wins)"):format(prompt, tostring(result.cliOverride))
    end
    vim.ui.select(items, {
      prompt = prompt,
      format_item = function(item)
        return item.text
      end,
    }, function(choice)
      if not choice then
        return
      end
      suggest.set_model(choice.id or nil)
      local msg = choice.id and ("suggestions will ask for %s"):format(choice.id) or "suggestions use the agent's default model"
      if result.cliOverride then
        msg = msg .. (" — but the agent was started with --pi-ide-suggestion-model %s, which wins"):format(tostring(result.cliOverride))
      end
      vim.notify("pi-ide.nvim: " .. msg, vim.log.levels.INFO)
    end)
  end)
  if not req then
    log.notify(err, vim.log.levels.WARN)
  end
end

--- Its :PiIde subcommand (core/commands.lua).
M.commands = { model = { run = function() M.pick() end } }

return M
