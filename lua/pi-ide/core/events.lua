-- The User autocmds pi-ide.nvim fires (:help pi-ide-events). A handler of the user's that
-- throws is logged; it never breaks what fired the event (a review opening or closing, a
-- client connecting).
local M = {}

function M.fire(pattern, data)
  local ok, err = pcall(vim.api.nvim_exec_autocmds, "User", { pattern = pattern, data = data, modeline = false })
  if not ok then
    require("pi-ide.core.log").warn("a User %s handler failed: %s", pattern, tostring(err))
  end
end

return M
