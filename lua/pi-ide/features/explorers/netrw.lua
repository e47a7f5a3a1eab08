-- netrw (filetype netrw), built in: b:netrw_curdir and the name netrw itself reads under the
-- cursor (its s:NetrwGetWord, reached through netrw#Call); in a tree listing, the folder of the
-- line (s:NetrwTreePath) from w:netrw_treetop.
local x = require("pi-ide.features.explorers")

local M = { name = "netrw" }

local TREE = 3

-- netrw's own function `fname`, or an error naming it (netrw changes with Neovim).
local function call(fname, ...)
  local ok, res = pcall(vim.fn["netrw#Call"], fname, ...)
  if not ok then
    error(("netrw#Call('%s') failed: %s"):format(fname, tostring(res):match("[^\n]*")), 0)
  end
  return res
end

-- The entry on the cursor's line, or nil on the banner (where netrw's reader acts on keys).
local function entry_here(buf)
  if vim.fn.line(".") < (vim.w.netrw_bannercnt or 1) then
    return nil
  end
  local word = call("NetrwGetWord")
  if type(word) ~= "string" or word == "" or word == "../" or word == "./" then
    return nil
  end
  if vim.w.netrw_liststyle == TREE and vim.w.netrw_treetop then
    local dir = call("NetrwTreePath", vim.w.netrw_treetop)
    return word:match("/$") and dir or dir:gsub("/?$", "/") .. word
  end
  local curdir = vim.b[buf].netrw_curdir
  if type(curdir) ~= "string" or curdir == "" then
    error("b:netrw_curdir is not set", 0)
  end
  return curdir:gsub("/?$", "/") .. word
end

function M.entries(buf, first, last)
  local function here()
    return entry_here(buf)
  end
  if not first then
    return { here() }
  end
  return x.at_lines(first, last, here)
end

return M
