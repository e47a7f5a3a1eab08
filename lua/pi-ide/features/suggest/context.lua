-- What getSuggestions sends: the text around the cursor and, when a treesitter parser is
-- there, a structural sketch of the file, the enclosing function or class, and whether the
-- cursor is in a comment. Without a parser those three are simply left out.
local M = {}

-- Node types that make an outline entry or an enclosing scope, across languages.
local STRUCTURAL = {
  "function", "method", "class", "struct", "impl", "interface", "module", "enum", "trait",
  "namespace", "type_declaration", "declaration", "definition", "constructor",
}

local function structural(node_type)
  for _, word in ipairs(STRUCTURAL) do
    if node_type:find(word, 1, true) then
      return true
    end
  end
  return false
end

local function parser_for(buf)
  local ok, parser = pcall(vim.treesitter.get_parser, buf, nil, { error = false })
  if ok and parser then
    return parser
  end
end

local function root_of(parser)
  local trees = parser:trees()
  local tree = trees and trees[1]
  if not tree then
    local ok, parsed = pcall(parser.parse, parser)
    tree = ok and parsed and parsed[1]
  end
  return tree and tree:root()
end

local function first_line(buf, node)
  local row = node:start()
  local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ""
  line = vim.trim(line)
  return #line > 120 and (line:sub(1, 117) .. "...") or line
end

-- Declarations two levels deep, one line each, indented by depth, at most max_bytes.
local function outline(buf, root, max_bytes)
  local out, size = {}, 0
  local function walk(node, depth)
    for child in node:iter_children() do
      if size > max_bytes then
        return
      end
      if child:named() then
        if structural(child:type()) then
          local entry = string.rep("  ", depth) .. first_line(buf, child)
          size = size + #entry + 1
          table.insert(out, entry)
          if depth < 1 then
            walk(child, depth + 1)
          end
        elseif depth < 2 then
          walk(child, depth)
        end
      end
    end
  end
  walk(root, 0)
  local text = table.concat(out, "\n")
  return #text > 0 and text:sub(1, max_bytes) or nil
end

local function node_at(root, row, col)
  return root:named_descendant_for_range(row, math.max(col - 1, 0), row, math.max(col - 1, 0))
end

local function enclosing_scope(buf, node, max_bytes)
  while node do
    if structural(node:type()) then
      local text = vim.treesitter.get_node_text(node, buf)
      return #text > max_bytes and text:sub(1, max_bytes) or text
    end
    node = node:parent()
  end
end

local function in_comment(node)
  for _ = 1, 3 do
    if not node then
      return false
    end
    if node:type():find("comment", 1, true) then
      return true
    end
    node = node:parent()
  end
  return false
end

--- The params of getSuggestions for the cursor in `win`.
function M.build(buf, win, cfg)
  local cursor = vim.api.nvim_win_get_cursor(win)
  local row, col = cursor[1] - 1, cursor[2]
  local c = cfg.context
  local first = math.max(0, row - c.before_lines)
  local lines = vim.api.nvim_buf_get_lines(buf, first, row + 1 + c.after_lines, false)
  local cur = lines[row - first + 1] or ""
  local before = vim.list_slice(lines, 1, row - first)
  table.insert(before, cur:sub(1, col))
  local after = { cur:sub(col + 1) }
  vim.list_extend(after, lines, row - first + 2, #lines)
  local ft = vim.bo[buf].filetype
  local params = {
    filePath = vim.api.nvim_buf_get_name(buf),
    language = ft ~= "" and ft or nil,
    cursorBefore = table.concat(before, "\n"),
    cursorAfter = table.concat(after, "\n"),
    suggestionCount = cfg.count,
  }
  local parser = parser_for(buf)
  local root = parser and root_of(parser)
  if root then
    params.outline = outline(buf, root, c.outline_max_bytes)
    local node = node_at(root, row, col)
    params.enclosingScope = enclosing_scope(buf, node, c.scope_max_bytes)
    params.cursorInComment = in_comment(node)
  end
  -- next_line: what follows the cursor's line (an auto-pair's closer after <CR>), see overlap.lua.
  return params, { row = row, col = col, prefix = cur:sub(1, col), suffix = cur:sub(col + 1), next_line = vim.api.nvim_buf_get_lines(buf, row + 1, row + 2, false)[1] }
end

return M
