-- oil.nvim (filetype oil): get_current_dir(), get_cursor_entry(), get_entry_on_line().
local x = require("pi-ide.features.explorers")

local M = { name = "oil.nvim" }

function M.entries(buf, first, last)
  local oil = x.require("oil")
  local dir = x.call(oil, "oil", "get_current_dir", buf)
  if type(dir) ~= "string" then
    error("this oil buffer is not a local folder", 0)
  end
  local entries = {}
  if first then
    for line = first, last do
      table.insert(entries, x.call(oil, "oil", "get_entry_on_line", buf, line) or nil)
    end
  else
    entries = { x.call(oil, "oil", "get_cursor_entry") }
  end
  return vim.tbl_map(function(e)
    return e.name and (dir:gsub("/?$", "/") .. e.name) or ""
  end, entries)
end

return M
