-- getCurrentSelection (read now) and getLatestSelection (the last state sent).
local M = {}

function M.getCurrentSelection()
  local native = require("pi-ide.core.native").get()
  local state = require("pi-ide.features.selection").compute() or native.selection_last()
  if not state then
    return { success = false, message = "No active editor found" }
  end
  state.success = true
  return state
end

function M.getLatestSelection()
  local native = require("pi-ide.core.native").get()
  return native.selection_last() or { success = false, message = "No selection available" }
end

return M
