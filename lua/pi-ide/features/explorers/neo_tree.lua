-- neo-tree (filetype neo-tree): the window's state from neo-tree.sources.manager, and its
-- tree's nodes (node.path, node.type).
local x = require("pi-ide.features.explorers")

local M = { name = "neo-tree" }

local function state_of(buf)
  local manager = x.require("neo-tree.sources.manager")
  if type(manager.get_state_for_window) == "function" then
    local state = x.call(manager, "manager", "get_state_for_window")
    if state then
      return state
    end
  end
  return x.call(manager, "manager", "get_state", vim.b[buf].neo_tree_source or "filesystem")
end

local function path_of(node)
  return node and node.type ~= "message" and node.path or nil
end

function M.entries(buf, first, last)
  local state = state_of(buf)
  if type(state) ~= "table" or not state.tree then
    error("no tree in this window", 0)
  end
  if not first then
    return { path_of(x.call(state.tree, "tree", "get_node", state.tree)) }
  end
  local out = {}
  for line = first, last do
    table.insert(out, path_of(x.call(state.tree, "tree", "get_node", state.tree, line)))
  end
  return out
end

return M
