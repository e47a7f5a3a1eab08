-- snacks.nvim's explorer and pickers (the list window, filetype snacks_picker_list): through
-- Snacks.picker.get(), picker:current(), picker:selected() and Snacks.picker.util.path().
local x = require("pi-ide.features.explorers")

local M = { name = "snacks.nvim" }

-- The picker whose list is shown in `buf` (or the only one open in this tab).
local function picker_of(snacks, buf)
  local pickers = x.call(snacks.picker, "Snacks.picker", "get", {})
  for _, p in ipairs(pickers) do
    if p.list and p.list.win and p.list.win.buf == buf then
      return p
    end
  end
  return #pickers == 1 and pickers[1] or error("no picker shows this list", 0)
end

-- The items on lines first..last of the list: its window's rows are its items, scrolled by
-- the list itself (list:row2idx), as snacks maps the cursor to its item.
local function items_on(p, first, last)
  local out, top = {}, vim.fn.line("w0")
  for line = first, last do
    local item = p.list:get(p.list:row2idx(line - top + 1))
    table.insert(out, item and p:resolve(item) or nil)
  end
  return out
end

function M.entries(buf, first, last)
  local snacks = x.require("snacks")
  local p = picker_of(snacks, buf)
  -- A range: its lines; else the entries selected in the picker (<Tab>), else the current one.
  local items = first and items_on(p, first, last) or x.call(p, "picker", "selected", p)
  if not first and #items == 0 then
    items = { x.call(p, "picker", "current", p) }
  end
  return vim.tbl_map(function(item)
    return x.call(snacks.picker.util, "Snacks.picker.util", "path", item) or ""
  end, items)
end

return M
