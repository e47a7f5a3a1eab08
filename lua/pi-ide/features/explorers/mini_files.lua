-- mini.files (filetype minifiles): MiniFiles.get_fs_entry(buf_id, line).
local x = require("pi-ide.features.explorers")

local M = { name = "mini.files" }

function M.entries(buf, first, last)
  local mini = type(_G.MiniFiles) == "table" and _G.MiniFiles or x.require("mini.files")
  local out = {}
  first = first or vim.api.nvim_win_get_cursor(0)[1]
  for line = first, last or first do
    local entry = x.call(mini, "MiniFiles", "get_fs_entry", buf, line)
    table.insert(out, type(entry) == "table" and entry.path or nil)
  end
  return out
end

return M
