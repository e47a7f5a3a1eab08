-- nvim-tree (filetype NvimTree): nvim-tree.api's tree.get_node_under_cursor() (node.name,
-- node.absolute_path). It reads only the cursor: a range moves it over each line.
local x = require("pi-ide.features.explorers")

local M = { name = "nvim-tree" }

function M.entries(_, first, last)
  local api = x.require("nvim-tree.api")
  local function node_path()
    local node = x.call(api.tree, "api.tree", "get_node_under_cursor")
    -- The first line, "..", is the root folder's parent.
    return node and node.name ~= ".." and node.absolute_path or nil
  end
  if not first then
    return { node_path() }
  end
  return x.at_lines(first, last, node_path)
end

return M
