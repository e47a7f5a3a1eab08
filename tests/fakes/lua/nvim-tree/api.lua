-- A fake nvim-tree (not installed here), for tests/context/explorers.rs: the documented API
-- function pi-ide.nvim calls (api.tree.get_node_under_cursor(), a node with name,
-- absolute_path and type), over a buffer of filetype "NvimTree" whose first line is the root's
-- ".." line, as nvim-tree draws it, then the folder's entries.
local api = { tree = {} }

local nodes = {}

--- api.tree.open({ path = dir }): shows `dir` in the current window.
function api.tree.open(opts)
  local dir = opts.path:gsub("/$", "")
  local list = { { name = "..", absolute_path = vim.fs.dirname(dir), type = "directory" } }
  for name, kind in vim.fs.dir(dir) do
    table.insert(list, { name = name, absolute_path = dir .. "/" .. name, type = kind })
  end
  table.sort(list, function(a, b)
    return a.name < b.name
  end)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.tbl_map(function(n)
    return n.name
  end, list))
  nodes[buf] = list
  vim.api.nvim_set_current_buf(buf)
  vim.bo[buf].filetype = "NvimTree"
end

function api.tree.get_node_under_cursor()
  local list = nodes[vim.api.nvim_get_current_buf()]
  return list and list[vim.api.nvim_win_get_cursor(0)[1]]
end

return api
